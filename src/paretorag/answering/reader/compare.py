"""Comparisons and yes/no: read an attribute for each named option from its own passage.

2WikiMultihopQA and HotpotQA ask many questions of two shapes (more than half of
2Wiki's dev questions):

- *choice*: "Which film came out first, *A* or *B*?", "Who was born earlier, *A* or *B*?",
  and the bridge form "Which film has the director who died later, *A* or *B*?" (read the
  director from the film's passage, then the date from the director's own passage);
- *yes/no*: "Are *X* and *Y* of the same nationality?", "Are *X* and *Y* both American
  writers?", with the same bridge form ("Do both films have directors from the same
  country?").

For each option the reader finds the passage about it (its title, or a first sentence
that names it), reads the attribute the question compares (birth or death date, life
span, the first date of the passage for "released / founded / came out", the
nationality for "same country"), compares, and answers with the option or yes/no,
citing the sentences it read. Where an attribute cannot be read, the answer falls back
to the terms of the question each option's passage covers, with a low confidence.

One module (over 400 lines): the question shapes, the attribute readers and the decision
share one small vocabulary of attributes; each part alone is short.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...providers.extractive import content_terms
from . import confidence as C
from .candidates import COUNTRIES, DEMONYMS, Reading, description, key
from .question import EVENTS, QuestionInfo
from .spans import DATE, YEAR

_MONTHS = {
    m: i
    for i, names in enumerate(
        (
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ),
        start=1,
    )
    for m in names
}
_LATER = re.compile(
    r"\b(?:later|latest|last|more recent(?:ly)?|most recent(?:ly)?|recent(?:ly)?|newer|newest|younger|youngest|after)\b",
    re.IGNORECASE,
)
_EARLIER = re.compile(
    r"\b(?:earlier|earliest|first|older|oldest|before|sooner|previous(?:ly)?)\b", re.IGNORECASE
)
_LIFESPAN = re.compile(
    r"\b(?:lived longer|longer life|older age|longest life|lived to an older)\b", re.IGNORECASE
)
_BIRTH = re.compile(r"\b(?:born|birth|younger|youngest|older|oldest)\b", re.IGNORECASE)
_DEATH = re.compile(r"\b(?:died|die|death)\b", re.IGNORECASE)
_RELATION = r"(director|composer|performer|producer|author|writer|creator|founder|father|mother|spouse|husband|wife)s?"
_OBJECT = r"(?:films?|albums?|songs?|books?|novels?|works?)"
# "Which film has the director who ...", "films whose directors ...", "the directors of films X and Y";
# not "Which film director is younger" (the options are the directors themselves)
_BRIDGE_PATTERNS = (
    re.compile(rf"\b{_OBJECT}\b.*?\b(?:the|whose|its|their)\s+{_RELATION}\b", re.IGNORECASE),
    re.compile(rf"\b{_RELATION}\s+of\s+(?:the\s+)?{_OBJECT}\b", re.IGNORECASE),
)


def bridge_relation(question: str) -> str | None:
    """The relation a comparison reads through (the films' *director*), or None."""
    for pattern in _BRIDGE_PATTERNS:
        m = pattern.search(question)
        if m is not None:
            return m.group(1).lower()
    return None


_NATIONALITY = re.compile(r"\b(?:nationality|country|countries|same nation)\b", re.IGNORECASE)
_PAREN = re.compile(r"\(([^()]{4,120})\)")
_BORN = re.compile(r"\bborn\b[^.;]{0,40}?(" + DATE.pattern + r")", re.IGNORECASE)
_DIED = re.compile(r"\b(?:died|death)\b[^.;]{0,40}?(" + DATE.pattern + r")", re.IGNORECASE)
_STEM = {
    "director": "direct",
    "composer": "compos",
    "performer": "perform",
    "producer": "produc",
    "author": "writ",
    "writer": "writ",
    "creator": "creat",
    "founder": "found",
}


@dataclass(frozen=True)
class Verdict:
    """A comparison's answer: the text, its confidence and the sentences it read."""

    answer: str
    confidence: float
    sentences: tuple[int, ...]  # indices into Reading.sentences
    how: str  # what was compared, for the answer's trace


def parse_date(text: str) -> tuple[int, int, int] | None:
    """A date string as ``(year, month, day)`` (missing parts are 0)."""
    year = YEAR.search(text)
    if year is None:
        return None
    month = 0
    for w in re.findall(r"[A-Za-z]+", text):
        month = _MONTHS.get(w.lower(), 0)
        if month:
            break
    day = 0
    m = re.search(r"\b(\d{1,2})\b(?!\d)", text.replace(year.group(1), " "))
    if m and 1 <= int(m.group(1)) <= 31:
        day = int(m.group(1))
    return (int(year.group(1)), month, day)


def passage_of(name: str, reading: Reading, *, fetch: bool = True) -> int | None:
    """The passage about ``name``: its title, else the first one whose opening sentence names it,
    else (``fetch``) the index's passage of that title (:attr:`Reading.lookup`): the second hop of
    a bridge question may not be among the top passages."""
    k = key(name)
    if not k:
        return None
    titles = [key(p.title) for p in reading.passages]
    for pi, t in enumerate(titles):
        if t == k:
            return pi
    for pi, t in enumerate(titles):  # "Love In A Fallen City (Film)" vs "Love in a Fallen City"
        if t and (re.sub(r"\s+\w*film\w*$", "", t) == re.sub(r"\s+\w*film\w*$", "", k)):
            return pi
    for pi, t in enumerate(titles):
        if t and (t.startswith(k) or k.startswith(t)) and min(len(t), len(k)) >= 4:
            return pi
    for si, s in enumerate(reading.sentences):
        if int(reading.sent_position[si]) == 0 and key(s).startswith(k):
            return int(reading.sent_passage[si])
    if fetch and reading.lookup is not None:
        found = reading.lookup(name)
        if found is not None and key(found.title) not in titles:
            return reading.extend(found)
    return None


def sentences_of(pi: int, reading: Reading) -> list[int]:
    return [si for si in range(len(reading.sentences)) if int(reading.sent_passage[si]) == pi]


def life_dates(
    pi: int, reading: Reading
) -> tuple[tuple[int, int, int] | None, tuple[int, int, int] | None, int | None]:
    """Birth and death dates read from a person's passage, and the sentence they came from."""
    for si in sentences_of(pi, reading)[:4]:
        s = reading.sentences[si]
        born = _BORN.search(s)
        died = _DIED.search(s)
        paren = _PAREN.search(s)
        if paren is not None and not (born and died):
            dates = [m.group(0) for m in DATE.finditer(paren.group(1))]
            inner = paren.group(1).lower()
            if len(dates) >= 2:
                return parse_date(dates[0]), parse_date(dates[-1]), si
            if len(dates) == 1:
                if re.search(r"\b(?:died|d\.|death)", inner):
                    return None, parse_date(dates[0]), si
                return parse_date(dates[0]), None, si
        if born or died:
            return (
                parse_date(born.group(1)) if born else None,
                parse_date(died.group(1)) if died else None,
                si,
            )
    return None, None, None


_CENTURY = re.compile(r"\b(?:(early|mid|late)[- ]+)?(\d{1,2})(?:st|nd|rd|th)[- ]century\b", re.IGNORECASE)
_PART_OF_CENTURY = {"early": 10, "mid": 50, "late": 85}


def first_date(pi: int, reading: Reading) -> tuple[tuple[int, int, int] | None, int | None]:
    """The first date of a passage ("is a 1951 American film", "founded in 1987"); a century
    where a sentence gives no year ("published in the late 19th century": 1885)."""
    sentences = sentences_of(pi, reading)[:4]
    for si in sentences:
        m = DATE.search(reading.sentences[si])
        if m is not None:
            return parse_date(m.group(0)), si
    for si in sentences:
        c = _CENTURY.search(reading.sentences[si])
        if c is not None:
            part = _PART_OF_CENTURY.get((c.group(1) or "mid").lower(), 50)
            return ((int(c.group(2)) - 1) * 100 + part, 0, 0), si
    return None, None


def nationality(pi: int, reading: Reading) -> tuple[str | None, int | None]:
    """The country of a passage's opening sentences: the first nationality or place that names
    a country ("an island in Saint Petersburg, Russia": Russia), else the first nationality,
    else the first place."""
    sis = sentences_of(pi, reading)[:2]
    first: tuple[str, int] | None = None
    for wanted in ("norp", "place"):
        for si in sis:
            for s in reading.sent_spans[si]:
                if s.kind == wanted:
                    k = _country_key(s.text)
                    if k in COUNTRIES:
                        return k, si
                    first = first or (k, si)
    return first if first is not None else (None, None)


def _country_key(text: str) -> str:
    k = key(text)
    return DEMONYMS.get(k, k)


_BY_NAME = re.compile(r"^\w*\s+by\s+((?:[A-Z\u00c0-\u024f][\w'\u2019.-]*\s*){1,4})")


def name_by(sentence: str, at: int) -> str | None:
    """The capitalised name after "by" at a relation's cue ("directed by Charlie Day"): the
    small spaCy model tags such names as a date or a place, or not at all."""
    m = _BY_NAME.match(sentence[at:])
    return m.group(1).strip().rstrip(".,;") if m is not None else None


def _hop(pi: int, relation: str, reading: Reading) -> tuple[int | None, int | None]:
    """From a work's passage to the passage of its ``relation`` (its director, ...): the person
    spaCy tags nearest the cue, else the name after "by" at the cue, where it has a page."""
    stem = _STEM.get(relation.lower(), relation.lower()[:5])
    best: tuple[int, int] | None = None
    for si in sentences_of(pi, reading):
        s = reading.sentences[si]
        low = s.lower()
        at = low.find(stem)
        if at < 0:
            continue
        names = []
        persons = [sp for sp in reading.sent_spans[si] if sp.kind == "person"]
        if persons:
            names.append(min(persons, key=lambda sp: abs(sp.start - at)).text)
        byname = name_by(s, at)
        if byname is not None and byname not in names:
            names.append(byname)
        for name in names:
            target = passage_of(name, reading)
            if target is not None and target != pi:
                return target, si
        if best is None and names:
            best = (-1, si)
    return None, (best[1] if best else None)


def _attribute(question: str) -> str:
    if _LIFESPAN.search(question):
        return "lifespan"
    if _DEATH.search(question):
        return "death"
    if _BIRTH.search(question):
        return "birth"
    return "date"


def _option_attribute(question: str, option: str, default: str) -> str:
    """The date an option is compared by where the question names its own event ("the forming of
    *The Dandy Warhols* or the birth of *Robert Young*": a band's first date, a person's birth),
    else ``default``."""
    m = re.search(
        rf"\b({EVENTS})\s+of\s+(?:the\s+)?" + re.escape(option),
        question,
        re.IGNORECASE,
    )
    if m is None:
        return default
    event = m.group(1).lower()
    return "birth" if event == "birth" else "death" if event == "death" else "date"


def _coverage(info: QuestionInfo, pi: int, reading: Reading, exclude: set[str]) -> tuple[float, int | None]:
    wanted = set(info.terms) - exclude - {"both", "same", "which"}
    best, at = 0.0, None
    if not wanted:
        return 0.0, None
    for si in sentences_of(pi, reading)[:4]:
        words = content_terms(reading.sentences[si])
        hits = sum(
            1 for w in wanted if w in words or (len(w) >= 5 and any(x.startswith(w[:5]) for x in words))
        )
        cov = hits / len(wanted)
        if cov > best:
            best, at = cov, si
    return best, at


def _read_value(attribute: str, pi: int, reading: Reading) -> tuple[tuple[int, ...] | None, int | None]:
    if attribute == "date":
        return first_date(pi, reading)
    born, died, si = life_dates(pi, reading)
    if attribute == "birth":
        return born, si
    if attribute == "death":
        return died, si
    if born and died:
        return ((died[0] - born[0]) * 400 + (died[1] - born[1]) * 31 + (died[2] - born[2]),), si
    return None, si


_MORE = re.compile(
    r"\b(?:more|most|higher|highest|taller|tallest|larger|largest|bigger|biggest|longer|longest)\b", re.I
)
_LESS = re.compile(r"\b(?:fewer|fewest|less|least|lower|lowest|smaller|smallest|shorter|shortest)\b", re.I)
_HEIGHT = re.compile(r"\b(?:higher|highest|taller|tallest|elevation|height)\b", re.I)
_NOUN_AFTER = re.compile(r"\b(?:more|most|fewer|fewest|less)\s+(?:\w+\s+)?(\w+)", re.I)
_WORD_NUMBERS = {
    w: i
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
}
_MEASURE = re.compile(r"([\d,]+(?:\.\d+)?)\s*(m|metres|meters|ft|feet)\b", re.I)
_COUNT = re.compile(r"\b([\d,]+|" + "|".join(_WORD_NUMBERS) + r")\s+(?:\w+\s+){0,2}?(\w+)", re.I)


def _number(text: str) -> float | None:
    t = text.lower().replace(",", "")
    if t in _WORD_NUMBERS:
        return float(_WORD_NUMBERS[t])
    try:
        return float(t)
    except ValueError:
        return None


def quantity(pi: int, question: str, reading: Reading) -> tuple[float | None, int | None]:
    """The quantity a "more / higher" comparison reads from a passage: a height in metres, or the
    count before the question's noun ("*120* species", "*seven* members")."""
    noun_m = _NOUN_AFTER.search(question)
    noun = noun_m.group(1).lower()[:5] if noun_m else ""
    for si in sentences_of(pi, reading)[:6]:
        s = reading.sentences[si]
        if _HEIGHT.search(question):
            m = _MEASURE.search(s)
            if m is not None and (value := _number(m.group(1))) is not None:
                feet = m.group(2).lower() in ("ft", "feet")
                return (value * 0.3048 if feet else value), si
        elif noun:
            for m in _COUNT.finditer(s):
                if m.group(2).lower().startswith(noun) and (value := _number(m.group(1))) is not None:
                    return value, si
    return None, None


def choose(info: QuestionInfo, reading: Reading) -> Verdict:
    """Answer a choice question with one of its options (:attr:`QuestionInfo.options`)."""
    a, b = info.options
    attribute = _attribute(info.text)
    bridge = bridge_relation(info.text)
    later = bool(_LATER.search(info.text)) and not _EARLIER.search(info.text)
    earlier = bool(_EARLIER.search(info.text))
    if attribute == "lifespan":
        later, earlier = True, False  # the longer life
    values: list[tuple[int, ...] | None] = []
    cited: list[int] = []
    for option in (a, b):
        pi = passage_of(option, reading)
        value = None
        if pi is not None:
            target = pi
            if bridge is not None:
                hop, si = _hop(pi, bridge, reading)
                if si is not None:
                    cited.append(si)
                target = hop if hop is not None else -1
            if target >= 0:
                own = _option_attribute(info.text, option, attribute) if bridge is None else attribute
                value, si = _read_value(own, target, reading)
                if si is not None:
                    cited.append(si)
        values.append(value)
    if (later or earlier) and values[0] is not None and values[1] is not None and values[0] != values[1]:
        pick_later = values[0] > values[1]
        chosen = a if pick_later == later else b
        return Verdict(
            chosen, C.COMPARE_VALUES, tuple(dict.fromkeys(cited)), f"{attribute}: {values[0]} vs {values[1]}"
        )
    more, less = bool(_MORE.search(info.text)), bool(_LESS.search(info.text))
    if (more or less) and not (later or earlier):
        amounts: list[float | None] = []
        for option in (a, b):
            pi = passage_of(option, reading)
            value_q, si = quantity(pi, info.text, reading) if pi is not None else (None, None)
            amounts.append(value_q)
            if si is not None:
                cited.append(si)
        x, y = amounts
        if x is not None and y is not None and x != y:
            chosen = a if (x > y) == more else b
            return Verdict(
                chosen, C.COMPARE_QUANTITIES, tuple(dict.fromkeys(cited)), f"quantity: {x:g} vs {y:g}"
            )
    # no comparable attribute: the option whose passage covers more of the question
    exclude = content_terms(a) | content_terms(b)
    scores = []
    for option in (a, b):
        pi = passage_of(option, reading)
        cov, si = _coverage(info, pi, reading, exclude) if pi is not None else (0.0, None)
        scores.append(cov)
        if si is not None:
            cited.append(si)
    chosen = a if scores[0] >= scores[1] else b
    confidence = C.COVERAGE_BASE + C.COVERAGE_GAIN * abs(scores[0] - scores[1])
    return Verdict(
        chosen, confidence, tuple(dict.fromkeys(cited)), f"coverage: {scores[0]:.2f} vs {scores[1]:.2f}"
    )


# "What profession did *A* and *B* both hold?", "What do *A* and *B* have in common?", "To what
# group of plants do both *A* and *B* belong?"
_COMMON = re.compile(
    r"\b(?:do|does|did|are|were|is|was)\s+(?:both\s+)?(?:the\s+|an?\s+)?(.+?)\s+and\s+(?:the\s+|an?\s+)?(.+?)"
    r"\s+(?:both\s+)?(?:have|has|had|hold|held|belong|belonged|share|shared)\b",
    re.IGNORECASE,
)
_IN_COMMON = re.compile(r"\b(?:in common|both|share|shared)\b", re.IGNORECASE)
# the question asks for a kind of thing (an occupation, a group): a nationality is no answer
_KIND_WORDS = re.compile(
    r"\b(?:profession|occupation|job|role|career|type|kind|group|genre|position|sport|field)s?\b",
    re.IGNORECASE,
)
# "X is an *American novelist and short story writer*": the complement, list and all
_IS_A = re.compile(
    r"\b(?:is|was|are|were)\s+(?:an?|the|one of the)\s+([^.;()]+?)"
    r"(?=\s*(?:[.;(]|\s(?:who|which|that|from|in|based|born|known|best|whose|with|by|for|on|at)\b|$))"
)
_ITEMS = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+")


def _called(pi: int, reading: Reading) -> tuple[list[list[str]], int | None]:
    """What a passage's opening sentences call their subject, as word lists ("an American
    novelist and short story writer": [american, novelist], [short, story, writer])."""
    for si in sentences_of(pi, reading)[:2]:
        m = _IS_A.search(reading.sentences[si])
        if m is not None:
            items = [i.split() for i in _ITEMS.split(m.group(1)) if i.strip()]
            return [i for i in items if i], si
    return [], None


def _same_word(a: str, b: str) -> bool:
    a, b = a.lower(), b.lower()
    return a == b or a.rstrip("s") == b.rstrip("s")


def in_common(info: QuestionInfo, reading: Reading) -> Verdict | None:
    """What two named things have in common, read from what each one's passage calls it: the
    longest shared ending of the two descriptions ("an American *film director*" and "an
    American *film director* and screenwriter": film director), without a leading nationality
    where the question asks for a kind of thing; for "What do A and B have in common?" the
    shared nationality when nothing else is shared. None when the question is not of this
    form, a passage is missing or nothing is shared (the span stages answer then)."""
    if info.wh not in ("what", "which", "other") or not _IN_COMMON.search(info.text):
        return None
    m = _COMMON.search(info.text)
    if m is None:
        return None
    called: list[list[list[str]]] = []
    cited: list[int] = []
    for name in (m.group(1), m.group(2)):
        pi = passage_of(name.strip(" \"'"), reading)
        if pi is None:
            return None
        items, si = _called(pi, reading)
        if not items or si is None:
            return None
        called.append(items)
        cited.append(si)
    kind = bool(_KIND_WORDS.search(info.text))
    best: list[str] = []
    for a in called[0]:
        for b in called[1]:
            n = 0
            while n < min(len(a), len(b)) and _same_word(a[-1 - n], b[-1 - n]):
                n += 1
            shared = b[len(b) - n :]
            if kind:
                shared = description(" ".join(shared)).split()
            if len(shared) > len(best):
                best = shared
    if not best and not kind:
        first_a, first_b = called[0][0][0], called[1][0][0]
        if first_a.lower() in DEMONYMS and _same_word(first_a, first_b):
            best = [first_b]
    if not best:
        return None
    answer = " ".join(best)
    return Verdict(answer, C.COMMON_WORDS, tuple(cited), f"common: {answer}")


_BOTH_NORP = re.compile(r"\bboth\s+([A-Z][a-z]+)\b")


def yes_no(info: QuestionInfo, reading: Reading) -> Verdict:
    """Answer a yes/no question: same nationality / country, or "both ..." by the passages' words."""
    cited: list[int] = []
    pair = info.pair
    if len(pair) == 2 and info.same and _NATIONALITY.search(info.text):
        bridge = bridge_relation(info.text)
        found: list[str | None] = []
        for name in pair:
            pi = passage_of(name, reading)
            value = None
            if pi is not None and bridge is not None:
                hop, si = _hop(pi, bridge, reading)
                if si is not None:
                    cited.append(si)
                pi = hop
            if pi is not None:
                value, si = nationality(pi, reading)
                if si is not None:
                    cited.append(si)
            found.append(value)
        if found[0] and found[1]:
            same = found[0] == found[1]
            return Verdict(
                "yes" if same else "no",
                C.SAME_NATIONALITY,
                tuple(dict.fromkeys(cited)),
                f"{found[0]} vs {found[1]}",
            )
        return Verdict("yes", C.NATIONALITY_MISSING, tuple(dict.fromkeys(cited)), "nationality not found")
    names = pair or info.entities[:2]
    both = _BOTH_NORP.search(info.text)
    if len(names) == 2 and both is not None and key(both.group(1)) in DEMONYMS:
        # "Are King Vidor and Géza von Cziffra both American directors?": each one's nationality
        asked = DEMONYMS[key(both.group(1))]
        read: list[str | None] = []
        for name in names:
            pi = passage_of(name, reading)
            value, si = nationality(pi, reading) if pi is not None else (None, None)
            if si is not None:
                cited.append(si)
            read.append(value)
        if any(v in COUNTRIES and v != asked for v in read):
            return Verdict("no", C.SAME_NATIONALITY, tuple(dict.fromkeys(cited)), f"{read} vs {asked}")
        if all(v == asked for v in read):
            return Verdict("yes", C.SAME_NATIONALITY, tuple(dict.fromkeys(cited)), f"{read} vs {asked}")
    exclude: set[str] = set()
    for n in names:
        exclude |= content_terms(n)
    covs = []
    for name in names:
        pi = passage_of(name, reading)
        cov, si = _coverage(info, pi, reading, exclude) if pi is not None else (0.0, None)
        covs.append(cov)
        if si is not None:
            cited.append(si)
    if not covs:
        return Verdict("yes", C.NOTHING_TO_COMPARE, (), "nothing to compare")
    low = min(covs)
    answer = "yes" if low >= 0.5 else "no"
    confidence = C.YES_NO_BASE + C.YES_NO_GAIN * abs(low - 0.5)
    return Verdict(answer, confidence, tuple(dict.fromkeys(cited)), f"coverage {covs}")


__all__ = [
    "Verdict",
    "choose",
    "first_date",
    "in_common",
    "life_dates",
    "nationality",
    "parse_date",
    "passage_of",
    "yes_no",
]
