"""Compositional questions read as a chain: an entity, a relation to follow, an attribute to read.

"Where did *James Stanley*'s **father** *die*?", "What is the *place of birth* of the
**director** of film *Oh Billy, Behave*?", "Who is the *spouse* of the **director** of film
*Up, Down, Fragile*?": 2WikiMultihopQA's compositional type (a third of its dev questions)
and many HotpotQA and MuSiQue bridges. The span ranker picks the first hop's answer as
often as the last, so such questions are read like the comparisons
(:mod:`~paretorag.answering.reader.compare`): find the anchor's passage, follow the relation to the
person it names (fetching that person's passage by title when it is not among the top
passages), and read the attribute there: place or date of birth or death, spouse,
father or mother, nationality. When a step fails, the span ranker answers instead.
"""

from __future__ import annotations

import re

from . import confidence as C
from .candidates import Reading, copulas, description, key
from .compare import Verdict, life_dates, passage_of, sentences_of
from .question import QuestionInfo

WORK_RELATIONS = ("director", "composer", "performer", "producer", "author", "writer", "creator", "founder")
FAMILY = ("father", "mother", "husband", "wife", "spouse")
_REL = "|".join((*WORK_RELATIONS, *FAMILY))
# "... of the director of film X", "... of X's father", "X's father ..."
_OF_WORK = re.compile(
    rf"\b(?:the\s+)?({_REL})\s+of\s+(?:the\s+)?(?:film|song|album|book|novel|work|series|play)?\s*(.+)$",
    re.IGNORECASE,
)
_POSSESSIVE = re.compile(rf"^(.+?)['\u2019]s\s+({_REL})\b")
_DEATH = re.compile(r"\b(?:die|died|death)\b", re.IGNORECASE)
_BIRTH = re.compile(r"\b(?:born|birth|birthday)\b", re.IGNORECASE)
_PLACE_Q = re.compile(r"\b(?:where|place|city|country)\b", re.IGNORECASE)
_STEMS = {
    "director": ("direct",),
    "composer": ("compos", "music by"),
    "performer": ("perform", "sung by", "recorded by", "by"),
    "producer": ("produc",),
    "author": ("writ", "author", "novel by", "by"),
    "writer": ("writ", "written by"),
    "creator": ("creat",),
    "founder": ("found",),
    "husband": ("married", "husband", "spouse", "wife of", "widow of", "consort of"),
    "wife": ("married", "wife", "spouse", "husband of"),
    "spouse": ("married", "wife", "husband", "spouse"),
    "father": ("father", "son of", "daughter of", "child of"),
    "mother": ("mother", "son of", "daughter of", "child of"),
}


_COMPOUND = {
    "maternal grandfather": ("mother", "father"),
    "maternal grandmother": ("mother", "mother"),
    "paternal grandfather": ("father", "father"),
    "paternal grandmother": ("father", "mother"),
    "father-in-law": ("spouse", "father"),
    "mother-in-law": ("spouse", "mother"),
}
_COMPOUND_RE = re.compile(r"\b(" + "|".join(_COMPOUND) + r")\b", re.IGNORECASE)
_LEAD = re.compile(
    r"^(?:(?:when|where|who|what|which|whose|did|was|is|were|does|do|country|nationality)\b\s*)+", re.I
)


def _clean_anchor(text: str) -> str:
    """The entity name of a captured anchor ("did James Stanley (Bishop)" -> "James Stanley (Bishop)")."""
    text = text.strip()
    if " of " in text:  # "the place of death of Gülnuş Sultan": names keep their capital "Of"
        text = text.rsplit(" of ", 1)[1]
    text = _LEAD.sub("", text).strip()
    text = re.sub(r"^(?:the\s+)?(?:film|song|album|book|novel)\s+", "", text, flags=re.IGNORECASE)
    words = text.split()
    while words and words[-1][:1].islower():  # "... Mirabelle work at", "... Countess is"
        words.pop()
    return " ".join(words)


_VERB_REL = {
    "directed": "director",
    "composed": "composer",
    "wrote": "writer",
    "written": "writer",
    "produced": "producer",
    "founded": "founder",
    "created": "creator",
    "performed": "performer",
    "sang": "performer",
}
# one hop: "Who directed X?", "Who wrote X?"
_WHO_VERB = re.compile(
    r"^\s*who\s+(" + "|".join(_VERB_REL) + r")\s+(?:the\s+)?(?:film|song|album|book|novel)?\s*(.+)$", re.I
)
# no hop: "When was X born?", "Where did X die?", "In what city was X born?", "What is the place of birth of X?"
_SELF = re.compile(
    r"^\s*(?:(?:in\s+)?(?:when|where|what(?:\s+\w+)?|which(?:\s+\w+)?)\s+(?:was|did|is|were)\s+(.+?)\s+"
    r"(born|die|died|pass away)"
    r"|what\s+is\s+the\s+(?:place|date|city|country)\s+of\s+(birth|death)\s+of\s+(.+))\s*$",
    re.IGNORECASE,
)


# no hop, a description: "What is X's occupation?", "What genre is X?"
_DESCRIBE = re.compile(
    r"^\s*what\s+(?:is|was)\s+(.+?)['\u2019]s\s+(?:occupation|profession|job)\s*$"
    r"|^\s*what\s+(?:genre|kind|type|sort)\s+(?:of\s+\w+\s+)?(?:is|was)\s+(.+?)\s*$",
    re.IGNORECASE,
)


_WHO_IS = re.compile(
    rf"^\s*who\s+(?:is|was)\s+(?:(?:the\s+)?(?:{_REL}|maternal|paternal|father-in-law|mother-in-law)\b"
    rf"|(?:(?!(?-i:\bof\b)).)+['\u2019]s\s+(?:{_REL}|(?:maternal|paternal)\s+\w+|father-in-law|mother-in-law)$)",
    re.IGNORECASE,
)


def parse(question: str) -> tuple[str, tuple[str, ...], str] | None:
    """``(anchor, relations, attribute)`` of a compositional question, or None.

    ``relations`` are followed in order from the anchor ("the spouse of the director of
    film X": director, then spouse). The attribute is ``death_place``, ``birth_place``,
    ``death_date``, ``birth_date``, ``nationality``, ``description`` (an occupation, a
    genre: the copular complement of the anchor's own passage) or ``person`` (the last
    related person is the answer, for "who" questions).
    """
    q = question.strip().rstrip("?").strip()
    described = _DESCRIBE.match(q)
    if described is not None:
        anchor = _clean_anchor(described.group(1) or described.group(2) or "")
        return (anchor, (), "description") if anchor else None
    relations: list[str] = []
    compound = _COMPOUND_RE.search(q)
    m = _POSSESSIVE.search(q)
    if compound is not None:
        relations = list(_COMPOUND[compound.group(1).lower()])
        tail = q[compound.end() :]
        head = q[: compound.start()]
        anchor = _clean_anchor(re.sub(r"^\s*of\s+", "", tail)) if tail.strip() else ""
        if not anchor:
            anchor = _clean_anchor(re.sub(r"['\u2019]s\s*$", "", head.strip()))
    elif m is not None:
        anchor, relations = _clean_anchor(m.group(1)), [m.group(2).lower()]
        inner = _OF_WORK.search(m.group(1))
        if inner is not None:  # "the director of film X's father"
            relations = [inner.group(1).lower(), *relations]
            anchor = _clean_anchor(inner.group(2))
    elif (v := _WHO_VERB.match(q)) is not None:
        anchor = _clean_anchor(v.group(2))
        return (anchor, (_VERB_REL[v.group(1).lower()],), "person") if anchor else None
    elif (own := _SELF.match(q)) is not None and not _OF_WORK.search(q):
        anchor = _clean_anchor(own.group(1) or own.group(4) or "")
        relations = []
    else:
        m = _OF_WORK.search(q)
        if m is None:
            return None
        relations, anchor = [m.group(1).lower()], m.group(2)
        inner = _OF_WORK.search(anchor)
        if inner is not None:  # "the spouse of the director of film X"
            relations = [inner.group(1).lower(), *relations]
            anchor = inner.group(2)
        anchor = _clean_anchor(anchor)
    rest = q.replace(anchor, " ") if anchor else q
    if _DEATH.search(rest):
        attribute = "death_place" if _PLACE_Q.search(rest) else "death_date"
    elif _BIRTH.search(rest):
        when = re.search(r"\b(?:when|date|birthday)\b", rest, re.I)
        attribute = "birth_place" if _PLACE_Q.search(rest) and not when else "birth_date"
    elif re.search(r"\b(?:country|nationality)\b|\bfrom$", rest, re.IGNORECASE):
        attribute = "nationality"
    elif _WHO_IS.match(q):  # "Who is X's father?", "Who is the spouse of the director of film X?"
        attribute = "person"
    else:
        return None
    if not anchor or len(anchor) > 120 or (not relations and attribute == "person"):
        return None
    return anchor, tuple(relations), attribute


def related(pi: int, relation: str, reading: Reading) -> tuple[str | None, int | None]:
    """The person of ``relation`` named in passage ``pi`` (its director, father, spouse), and the sentence."""
    cues = _STEMS.get(relation, (relation[:5],))
    title = key(reading.passages[pi].title)
    for si in sentences_of(pi, reading):
        s = reading.sentences[si]
        low = s.lower()
        hits = [low.find(c) for c in cues if low.find(c) >= 0]
        if not hits:
            continue
        at = min(hits)
        persons = [sp for sp in reading.sent_spans[si] if sp.kind == "person" and key(sp.text) != title]
        if relation in ("father", "mother") and re.search(r"\b(?:son|daughter|child) of\b", low):
            after = [sp for sp in persons if sp.start > at]
            if after:
                pick = after[0] if relation == "father" or len(after) == 1 else after[1]
                return pick.text, si
        if relation in WORK_RELATIONS:
            after = [sp for sp in persons if sp.start >= at]
            if after:
                return after[0].text, si
        if persons:
            return min(persons, key=lambda sp: abs(sp.start - at)).text, si
    return None, None


def _place_after(pi: int, cue: re.Pattern[str], reading: Reading) -> tuple[str | None, int | None]:
    for si in sentences_of(pi, reading)[:6]:
        s = reading.sentences[si]
        m = cue.search(s)
        if m is None:
            continue
        places = [sp for sp in reading.sent_spans[si] if sp.kind == "place"]
        for i, sp in enumerate(places):
            if 0 <= sp.start - m.end() <= 60:
                end = sp.end
                for nxt in places[i + 1 :]:  # "Hastings, Minnesota": the place with its region
                    if s[end : nxt.start].strip() == ",":
                        end = nxt.end
                    else:
                        break
                return s[sp.start : end], si
    return None, None


_BORN_AT = re.compile(r"\bborn\b", re.IGNORECASE)
_DIED_AT = re.compile(r"\b(?:died|death)\b", re.IGNORECASE)


_PAREN = re.compile(r"\(([^()]{6,160})\)")


def _paren_place(pi: int, which: int, reading: Reading) -> tuple[str | None, int | None]:
    """The place in the birth (0) or death (1) half of "(6 June 1906, Graz – 2 November 1994, Paris)"."""
    for si in sentences_of(pi, reading)[:2]:
        s = reading.sentences[si]
        m = _PAREN.search(s)
        if m is None or not re.search(r"[\u2013\u2014-]", m.group(1)):
            continue
        halves = re.split(r"\s[\u2013\u2014-]\s|[\u2013\u2014]", m.group(1), maxsplit=1)
        if len(halves) != 2:
            continue
        lo = m.start(1) + (0 if which == 0 else m.group(1).find(halves[1]))
        hi = lo + len(halves[which])
        for sp in reading.sent_spans[si]:
            if sp.kind == "place" and lo <= sp.start < hi:
                return sp.text, si
    return None, None


def attribute_of(pi: int, attribute: str, reading: Reading) -> tuple[str | None, int | None]:
    """Read ``attribute`` from passage ``pi`` (a person's page)."""
    if attribute in ("birth_place", "death_place"):
        which = 0 if attribute == "birth_place" else 1
        found = _paren_place(pi, which, reading)
        if found[0] is not None:
            return found
        return _place_after(pi, _BORN_AT if which == 0 else _DIED_AT, reading)
    if attribute in ("birth_date", "death_date"):
        born, died, si = life_dates(pi, reading)
        value = born if attribute == "birth_date" else died
        if value is None or si is None:
            return None, None
        # the date as the passage writes it
        from .spans import DATE

        texts = [m.group(0) for m in DATE.finditer(reading.sentences[si])]
        texts = [t for t in texts if str(value[0]) in t]
        pick = texts[0] if attribute == "birth_date" or len(texts) == 1 else texts[-1]
        return (pick if texts else str(value[0])), si
    if attribute == "description":
        for si in sentences_of(pi, reading)[:2]:
            for phrase, _ in copulas(reading.sentences[si]):
                desc = description(phrase)
                if desc:
                    return desc, si
        return None, None
    if attribute == "nationality":
        for si in sentences_of(pi, reading)[:2]:
            for sp in reading.sent_spans[si]:
                if sp.kind in ("norp", "place"):
                    return sp.text, si
    return None, None


def chain(info: QuestionInfo, reading: Reading) -> Verdict | None:
    """Answer a compositional question by following its chain, or None when a step fails."""
    parsed = parse(info.text)
    if parsed is None:
        return None
    anchor, relations, attribute = parsed
    pi = passage_of(anchor, reading)
    if pi is None:
        return None
    cited: list[int] = []
    name = anchor
    for relation in relations:
        found, si = related(pi, relation, reading)
        if found is None or si is None:
            return None
        name = found
        cited.append(si)
        if relation is relations[-1] and attribute == "person":
            break
        target = passage_of(name, reading)
        if target is None or target == pi:
            return None
        pi = target
    how = f"{attribute} of {' of '.join(reversed(relations))} of {anchor} ({name})"
    if attribute == "person":
        return Verdict(name, C.CHAIN_PERSON, tuple(cited), how)
    value, sj = attribute_of(pi, attribute, reading)
    if value is None or sj is None:
        return None
    cited.append(sj)
    return Verdict(value, C.CHAIN_ATTRIBUTE, tuple(cited), how)


__all__ = ["attribute_of", "chain", "parse", "related"]
