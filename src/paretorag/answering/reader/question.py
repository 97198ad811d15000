"""Question analysis: what kind of answer a question asks for, and what it names.

The reader's first stage. From the question's words (and the spaCy entities of the
question, from the same small English model the entity graph uses) it reads:

- the wh-type (``who``, ``when``, ``where``, ``what``, ``which``, ``how many``, ``how``,
  ``why``, or ``yes/no`` for a question that opens with an auxiliary verb);
- the expected answer type (:data:`TYPES`): a person, a place, a date, a number, an
  organisation, a nationality, a description (an occupation, a genre: "X is an American
  *actor*"), yes/no, a choice between named options, or a free phrase;
- the named options of a choice question ("Which film came out first, *A* or *B*?")
  and the two things a yes/no comparison names ("Are *X* and *Y* both American?");
- the question's content terms, split into those inside its named entities and the
  *relation* terms outside them ("father", "born", "director"): the words that say which
  fact of the entity is asked for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...providers.extractive import content_terms

TYPES = ("person", "place", "date", "number", "org", "norp", "description", "yesno", "choice", "phrase")
WH = ("who", "when", "where", "how many", "how", "why", "which", "what", "yesno", "other")

_AUX = re.compile(
    r"^\s*(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|should|shall|may|might)\b",
    re.IGNORECASE,
)
_WH_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("how many", re.compile(r"\bhow (?:many|much|long|old|far|tall|big|high|large)\b", re.IGNORECASE)),
    (
        "when",
        re.compile(r"\b(?:when|what year|which year|what date|what century|what decade)\b", re.IGNORECASE),
    ),
    ("who", re.compile(r"\b(?:who|whom|whose)\b", re.IGNORECASE)),
    ("where", re.compile(r"\bwhere\b", re.IGNORECASE)),
    ("why", re.compile(r"\bwhy\b", re.IGNORECASE)),
    ("how", re.compile(r"\bhow\b", re.IGNORECASE)),
    ("which", re.compile(r"\bwhich\b", re.IGNORECASE)),
    ("what", re.compile(r"\bwhat\b", re.IGNORECASE)),
)
_PLACE_WORDS = re.compile(
    r"\b(?:place|city|country|state|town|village|county|province|region|located|location|born in|"
    r"died in|buried|headquarter\w*|capital|continent|island|river)\b",
    re.IGNORECASE,
)
_NORP_WORDS = re.compile(r"\b(?:nationality|citizen\w*|ethnicity|religion)\b", re.IGNORECASE)
_ORG_WORDS = re.compile(
    r"\b(?:company|band|team|club|university|college|school|organi[sz]ation|party|label|network|"
    r"publisher|magazine|newspaper|group|agency|studio|firm)\b",
    re.IGNORECASE,
)
_PERSON_WORDS = re.compile(
    r"\b(?:father|mother|son|daughter|wife|husband|spouse|brother|sister|child|parent|grandfather|"
    r"grandmother|director|composer|author|writer|producer|performer|founder|president|king|queen|"
    r"singer|actor|actress|player|coach|manager|uncle|aunt|sibling|creator|designer|architect|"
    r"painter|poet|leader|ruler|emperor|successor|predecessor|father-in-law|mother-in-law)\b",
    re.IGNORECASE,
)
_DESCRIPTION = re.compile(
    r"\b(?:occupation|profession|job|genre|what kind of|what type of|what sort of)\b", re.IGNORECASE
)
_DATE_WORDS = re.compile(r"\b(?:year|date|century|decade|born|died)\b", re.IGNORECASE)
_OR_SPLIT = re.compile(r"\s*,?\s+or\s+", re.IGNORECASE)
_BOTH = re.compile(r"\bboth\b", re.IGNORECASE)
# a word as the entity recogniser's tokenizer splits it: "Tr'en", "Jean-Luc", "U.S"; a final "'s" is its own token
_WORD = re.compile(r"[^\W_]+(?:[-'\u2019.&][^\W_]+)*")
_POSSESSIVE = re.compile(r"['\u2019]s$", re.IGNORECASE)
_MAX_NAME_WORDS = 8
# words that open a question with a capital without naming anything
_OPENER = re.compile(
    r"(?:a|an|the|of|in|on|at|to|for|from|by|with|and|or|but|is|are|was|were|be|been|do|does|did|has|have|"
    r"had|can|could|will|would|should|shall|may|might|what|which|who|whom|whose|when|where|why|how|name|"
    r"list|tell|give|according|during|after|before|as|since|until|if)",
    re.IGNORECASE,
)
_SAME = re.compile(r"\bsame\b", re.IGNORECASE)


@dataclass(frozen=True)
class QuestionInfo:
    """What :func:`analyze` reads from a question."""

    text: str
    wh: str  # one of WH
    expected: str  # one of TYPES
    options: tuple[str, ...] = ()  # named options of a choice question, in the question's order
    pair: tuple[str, ...] = ()  # the two things a yes/no comparison names
    entities: tuple[str, ...] = ()  # named entities of the question (spaCy), longest first
    terms: frozenset[str] = field(default_factory=frozenset)  # stemmed content terms
    relation_terms: frozenset[str] = field(default_factory=frozenset)  # content terms outside entities
    same: bool = False  # "the same country / nationality"
    both: bool = False  # "both ..."


def wh_type(question: str) -> str:
    """The question's wh-type (:data:`WH`); ``yesno`` for one opening with an auxiliary."""
    head = question.strip()
    if _AUX.match(head) and not re.search(r"\b(?:who|what|which|when|where|how)\b", head[:12], re.I):
        return "yesno"
    first = None
    for kind, pattern in _WH_PATTERNS:
        m = pattern.search(head)
        if m is not None and (first is None or m.start() < first[1]):
            first = (kind, m.start())
    return first[0] if first else "other"


_BETWEEN = re.compile(
    r"^between\s+(?:the\s+)?(.+?)\s+and\s+(?:the\s+)?(.+?),\s*(?:which|who|what)\b", re.IGNORECASE
)
# an option named by its event: "the forming of The Dandy Warhols or the birth of Robert Young"
EVENTS = r"forming|formation|founding|birth|death|release|creation|establishment|opening"
_EVENT_OF = re.compile(rf"\b(?:the\s+)?(?:{EVENTS})\s+of\s+(?:the\s+)?(?=[A-Z0-9])")


def split_options(question: str) -> tuple[str, ...]:
    """The two named options of "..., A or B?" (or "Is A or B ...?"); empty when there are none.

    The options follow the first comma of the question (option titles may hold commas
    themselves, "The Adventures Of Priscilla, Queen Of The Desert"); without a comma,
    the two capitalized phrases around " or ".
    """
    q = question.strip().rstrip("?").strip()
    between = _BETWEEN.match(q)  # "Between Iain Banks and Irwin Shaw, which writer ..."
    if between is not None:
        return (between.group(1).strip(), between.group(2).strip())
    if not re.search(r"\bor\b", q, re.IGNORECASE):
        return ()
    q = _EVENT_OF.sub("", q)  # "the forming of The Dandy Warhols or the birth of Robert Young"
    _head, comma, tail = q.partition(",")
    if comma and re.search(r"\bor\b", tail, re.IGNORECASE):
        parts = [p.strip(" ,\"'") for p in _OR_SPLIT.split(tail.strip(), maxsplit=1)]
    else:
        m = re.search(r"((?:[A-Z0-9][\w'.&:-]*\s*)+)\s+or\s+((?:(?:the\s+)?[A-Z0-9][\w'.&:-]*\s*)+)", q)
        if m is None:
            return ()
        parts = [m.group(1).strip(), m.group(2).strip()]
    parts = [re.sub(r"^(?:the|a|an)\s+(?=[A-Z])", "", p, flags=re.IGNORECASE).strip() for p in parts]
    if len(parts) != 2 or not all(parts) or any(len(p) > 120 for p in parts):
        return ()
    parts[0] = re.sub(r"^(?:is|was|are|were|did|does|do|has|have)\s+", "", parts[0], flags=re.IGNORECASE)
    parts[1] = re.split(r"\s+(?:is|was|are|were|born|died)\b", parts[1])[0].strip()
    return (parts[0], parts[1])


def split_pair(question: str, entities: tuple[str, ...]) -> tuple[str, ...]:
    """The two things a yes/no comparison names: "Are X and Y both ...", "Were X and Y from ..."."""
    q = question.strip().rstrip("?")
    q = re.sub(r"\b(?:the\s+)?directors?\s+of\s+(?:the\s+)?films?\s+", "", q, flags=re.IGNORECASE)
    q = re.sub(r"\bdirector of film\s+", "", q, flags=re.IGNORECASE)
    m = re.search(
        r"^\s*\w+\s+(?:both\s+)?(?:films?\s+|the\s+)?(.+?)\s+and\s+(.+?)"
        r"(?:\s+films?)?\s+(?:both|from|of|located|share|have|in|produced|the same|ESA|lead|"
        r"published|found|flowering|types?)\b",
        q,
        re.IGNORECASE,
    )
    if m is None:
        return ()
    a, b = (re.sub(r"^(?:the|a|an|both)\s+", "", s.strip(" ,"), flags=re.IGNORECASE) for s in m.groups())
    if not a or not b or len(a) > 100 or len(b) > 100:
        return ()
    return (a, b)


def expected_type(question: str, wh: str, options: tuple[str, ...]) -> str:
    """The answer type asked for (:data:`TYPES`)."""
    if wh == "yesno" and not options:
        return "yesno"
    if options:
        return "choice"
    if wh == "when":
        return "date"
    if wh == "how many":
        return "number"
    if wh == "where":
        return "place"
    if wh == "who":
        return "person" if not _ORG_WORDS.search(question) else "org"
    if _NORP_WORDS.search(question):
        return "norp"
    if _DESCRIPTION.search(question):
        return "description"
    if wh in ("what", "which", "other"):
        head = question.lower()
        m = re.search(
            r"\b(?:what|which)\s+(?:is|was|are|were)\s+(?:the\s+|a\s+|an\s+)?(\w+)", head
        ) or re.search(r"\b(?:what|which)\s+(?:\w+\s+){0,2}?(\w+)", head)
        noun = m.group(1) if m else ""
        if _DATE_WORDS.search(noun) or re.search(r"\bwhat (?:year|date)\b", head):
            return "date"
        if _PLACE_WORDS.search(noun) or (_PLACE_WORDS.search(head[:40]) and "where" in head):
            return "place"
        if _ORG_WORDS.search(noun):
            return "org"
        if _PERSON_WORDS.search(noun):
            return "person"
        if re.search(r"\b(?:place|city|country|state|town)\b", head):
            return "place"
        if _PERSON_WORDS.search(head) and re.search(r"\b(?:who|whom|name)\b", head):
            return "person"
    return "phrase"


def known_entities(question: str, names: frozenset[str]) -> tuple[str, ...] | None:
    """The question's named entities found among ``names`` (the corpus's entity texts as the
    entity recogniser found them, :meth:`paretorag.answering.reader.stored.StoredSpans.names`), or None
    when they may not be all of them.

    Words are matched longest first (up to eight words, from the left), as written. The
    names suffice when every capitalized word of the question lies inside a match, except
    an opening word such as "What" or "In"; a question with no capitalized word past its
    opening has no entities (dates and numbers, which the question's entities leave out,
    are not asked for). Otherwise, or when the question does not open with a capital (its
    writer does not mark names), the caller parses the question (None).
    """
    if not question.lstrip()[:1].isupper():
        return None  # written without capitals ("who plays larry in ..."): the words cannot tell names
    words = []
    for m in _WORD.finditer(question):
        end = m.end()
        p = _POSSESSIVE.search(m.group(0))
        if p is not None and p.start() > 0:
            end = m.start() + p.start()
        words.append((m.start(), end))
    found: list[str] = []
    covered = [False] * len(words)
    i = 0
    while i < len(words):
        for j in range(min(len(words), i + _MAX_NAME_WORDS), i, -1):
            text = question[words[i][0] : words[j - 1][1]]
            if " ".join(text.split()) in names:
                found.append(text)
                covered[i:j] = [True] * (j - i)
                i = j
                break
        else:
            i += 1
    for n, (a, b) in enumerate(words):
        word = question[a:b]
        if covered[n] or not word[0].isupper() or word == "I":
            continue
        if n == 0 and _OPENER.fullmatch(word):
            continue
        return None
    return tuple(dict.fromkeys(found))


def analyze(question: str, entities: tuple[str, ...] = ()) -> QuestionInfo:
    """A :class:`QuestionInfo` for ``question`` (``entities``: its spaCy named entities, if parsed)."""
    wh = wh_type(question)
    options = split_options(question) if wh != "why" else ()
    if wh == "yesno" and options and not re.match(r"^\s*(?:is|was)\b", question, re.I):
        options = ()  # "Are X or Y ...?" is rare; "Is A or B public?" is a choice
    expected = expected_type(question, wh, options)
    pair = split_pair(question, entities) if expected == "yesno" else ()
    terms = frozenset(content_terms(question))
    inside: set[str] = set()
    for e in (*entities, *options, *pair):
        inside |= content_terms(e)
    ents = tuple(sorted(set(entities), key=len, reverse=True))
    return QuestionInfo(
        text=question,
        wh=wh,
        expected=expected,
        options=options,
        pair=pair,
        entities=ents,
        terms=terms,
        relation_terms=frozenset(terms - inside),
        same=bool(_SAME.search(question)),
        both=bool(_BOTH.search(question)),
    )


__all__ = [
    "EVENTS",
    "TYPES",
    "WH",
    "QuestionInfo",
    "analyze",
    "expected_type",
    "known_entities",
    "split_options",
    "split_pair",
    "wh_type",
]
