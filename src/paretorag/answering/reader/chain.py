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
from collections.abc import Sequence

from . import confidence as C
from .candidates import Reading, copulas, description, key
from .compare import Verdict, life_dates, name_by, passage_of, sentences_of
from .question import QuestionInfo
from .spans import Span

WORK_RELATIONS = ("director", "composer", "performer", "producer", "author", "writer", "creator", "founder")
FAMILY = ("father", "mother", "husband", "wife", "spouse")
_REL = "|".join((*WORK_RELATIONS, *FAMILY))
# "... of the director of film X", "... of X's father", "X's father ..."
_OF_WORK = re.compile(
    rf"\b(?:the\s+)?(?-i:({_REL})\s+of)\s+(?:the\s+)?(?:film|song|album|book|novel|work|series|play)?\s*(.+)$",
    re.IGNORECASE,
)
_POSSESSIVE = re.compile(rf"^(.+?)['\u2019]s\s+({_REL})\b")
_DEATH = re.compile(r"\b(?:die|died|death)\b", re.IGNORECASE)
_BIRTH = re.compile(r"\b(?:born|birth|birthday)\b", re.IGNORECASE)
_CAUSE_Q = re.compile(r"\bcause\b|^\s*why\b", re.IGNORECASE)
_BURIAL_Q = re.compile(r"\b(?:buried|burial|interred|grave)\b", re.IGNORECASE)
_STUDY_Q = re.compile(
    r"\b(?:study|studied|graduate|graduated|educated|education|alma mater)\b", re.IGNORECASE
)
_WORK_Q = re.compile(r"\b(?:work|works|worked|employer|employed)\b", re.IGNORECASE)
_AWARD_Q = re.compile(r"\b(?:award|awards|prize)\b", re.IGNORECASE)
_PLACE_Q = re.compile(r"\b(?:where|place|city|country)\b", re.IGNORECASE)
_STEMS = {
    "director": ("direct",),
    "composer": ("compos", "music by", "score", "written by", "song by"),
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


def _clean_anchor(text: str, *, named: bool = False) -> str:
    """The entity name of a captured anchor ("did James Stanley (Bishop)" -> "James Stanley (Bishop)").

    ``named``: the text follows "of film", "of song": the name starts there, whatever its first
    words ("When The Stars Go Blue", "The Song Of The Old Days", "Do You Believe? (Film)").
    """
    text = text.strip()
    if not named:
        if " of " in text:  # "the place of death of Gülnuş Sultan": names keep their capital "Of"
            text = text.rsplit(" of ", 1)[1]
        text = _LEAD.sub("", text).strip()
        text = re.sub(r"^(?:the\s+)?(?:film|song|album|book|novel)\s+", "", text, flags=re.IGNORECASE)
    words = text.split()
    while words and words[-1][:1].islower():  # "X die", "... Mirabelle work at", "... Countess is"
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
    ``death_date``, ``birth_date``, ``nationality``, ``burial_place``, ``education`` (the
    school after "studied at", "graduated from"), ``employer``, ``award``, ``description`` (an
    occupation, a genre: the copular complement of the anchor's own passage) or ``person``
    (the last related person is the answer, for "who" questions). A cause of death is none of
    them: such a question is left to the span stages.
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
        anchor = _clean_anchor(anchor, named=True)
    rest = q.replace(anchor, " ") if anchor else q
    if _CAUSE_Q.search(rest):  # "What is the cause of death of X's father?": no date, no place
        return None
    if _BURIAL_Q.search(rest):
        attribute = "burial_place"
    elif _DEATH.search(rest):
        attribute = "death_place" if _PLACE_Q.search(rest) else "death_date"
    elif _BIRTH.search(rest):
        when = re.search(r"\b(?:when|date|birthday)\b", rest, re.I)
        attribute = "birth_place" if _PLACE_Q.search(rest) and not when else "birth_date"
    elif _STUDY_Q.search(rest):  # before "from": "Where did X's father graduate from?"
        attribute = "education"
    elif _WORK_Q.search(rest):
        attribute = "employer"
    elif _AWARD_Q.search(rest):
        attribute = "award"
    elif re.search(r"\b(?:country|nationality)\b|\bfrom$", rest, re.IGNORECASE):
        attribute = "nationality"
    elif _WHO_IS.match(q):  # "Who is X's father?", "Who is the spouse of the director of film X?"
        attribute = "person"
    else:
        return None
    if not anchor or len(anchor) > 120 or (not relations and attribute == "person"):
        return None
    return anchor, tuple(relations), attribute


_NAME_WORD = r"[A-Z\u00c0-\u024f][\w'\u2019.-]*"
_RANKS = (
    "Duke|Duchess|Count|Countess|Prince|Princess|Earl|Baron|Baroness|Baronet|Lord|Lady|Marquess|Marquis|"
    "Margrave|Landgrave|Elector|Viscount|Viscountess|King|Queen|Emperor|Empress|Archduke|Archduchess|"
    "Grand Duke|Grand Duchess|Abbess|Seigneur|Heiress"
)
# "of Waldeck| and Pyrmont", not "of Bavaria| and Anna of Brunswick" (another person)
_AND_PLACE = rf"(?:\s+and\s+{_NAME_WORD}(?![\w'\u2019.-])(?!\s+(?:of|de|von|[A-Z])))?"
# what follows a name in a title: "Johann| of Limburg", "Thomas Howard|, 1st Earl of Effingham",
# "Karl August|, Prince of Waldeck and Pyrmont", "Henry VIII| the Sparrow"
_NAME_TAIL = re.compile(
    rf"^(?:\s+(?:of|de|von|van|zu|the)\s+{_NAME_WORD}(?:\s+{_NAME_WORD})*{_AND_PLACE})?"
    rf"(?:,\s+(?:\d+(?:st|nd|rd|th)\s+)?(?:{_RANKS})\b(?:\s+(?:of|de|von)\s+{_NAME_WORD}(?:\s+{_NAME_WORD})*"
    rf"{_AND_PLACE})?)?"
)
_CUT = re.compile(r"\.\s+(?=(?:He|She|They|His|Her|It|In|The|After|During)\b)")
_HONORIFIC_ANY = re.compile(
    r"^(?:Archduke|Archduchess|Prince|Princess|Grand Duke|Grand Duchess|Lord|Lady|Sir)\s+(?=[A-Z])"
)
_BROKEN_HYPHEN = re.compile(r"(?<=\w)-\s+(?=[A-Z])")
_HONORIFIC = re.compile(r"^(?:King|Queen|Emperor|Empress|Duke|Sir|Caliph|Pharaoh)\s+(?=[A-Z])")
# "son of A and B", "daughter of A by his wife B": the father before the joint, the mother after it
_PARENTS = re.compile(r"\b(?:son|daughter|child|children|sons|daughters)\s+of\s+", re.IGNORECASE)
_FEMALE = re.compile(
    r"\s*(?:the\s+)?(?:Princess|Queen|Lady|Duchess|Countess|Empress|Archduchess|Grand Duchess|Infanta|Mrs|Madame)\b"
)
_JOINT = re.compile(
    r"\s+(?:and|by)\s+(?:(?:his|her|their)\s+)?(?:(?:first|second|third)\s+)?(?:wife\s+|consort\s+)?"
)


def full_name(sentence: str, start: int, end: int) -> str:
    """The name at ``sentence[start:end]`` with the title that follows it: spaCy tags "Albert III"
    in "daughter of Albert III, Duke of Bavaria", and the person's page is "Albert III, Duke of Bavaria"."""
    tail = _NAME_TAIL.match(sentence[end:])
    text = sentence[start : end + (tail.end() if tail else 0)].strip()
    text = _CUT.split(text, maxsplit=1)[0]  # "Artatama I. He ...": a sentence the splitter missed
    text = _BROKEN_HYPHEN.sub("-", text)  # "Anhalt- Bernburg", as the corpus writes some names
    return re.sub(r"['\u2019]s$", "", _HONORIFIC.sub("", text)).rstrip(".,;")


def _gender(name: str | None, segment: str, reading: Reading) -> str | None:
    """``"f"`` or ``"m"`` for the person named at the start of ``segment``: a woman's title
    ("Princess", "Queen" ...), else the pronouns of their page ("she", "her" against "he",
    "his"; a passage read with that title, else the index's page by that name); else None."""
    if _FEMALE.match(segment):
        return "f"
    if not name:
        return None
    k = key(name)
    page = next((p for p in reading.passages if key(p.title) == k), None)
    if page is None and reading.lookup is not None:
        page = reading.lookup(name)
    if page is None:
        return None
    text = page.text[:800]
    she = len(re.findall(r"\b(?:she|her|hers|herself)\b", text, re.IGNORECASE))
    he = len(re.findall(r"\b(?:he|his|him|himself)\b", text, re.IGNORECASE))
    return "f" if she > he else "m" if he > she else None


def _name_in(s: str, lo: int, hi: int, persons: Sequence[Span]) -> str | None:
    """The first person named in ``s[lo:hi]``: spaCy's span with its title, else the capitalised words."""
    inside = [sp for sp in persons if lo <= sp.start < hi]
    if inside:
        return full_name(s, inside[0].start, inside[0].end)
    words = re.match(rf"\s*(?:the\s+)?((?:{_NAME_WORD}\s*)+)", s[lo:hi])
    return full_name(s, lo + words.start(1), lo + words.end(1)) if words is not None else None


def _parent(s: str, si: int, relation: str, reading: Reading, title: str) -> str | None:
    """The father or mother in "son of A and B" (father before the joint, mother after it)."""
    m = _PARENTS.search(s)
    if m is None:
        return None
    # a parenthesis blanked out, offsets kept: "Stanisław I (1677-1766), King of Poland, and Catherine ..."
    rest = re.sub(r"\([^()]*\)", lambda p: " " * len(p.group(0)), s[m.end() :])
    rest = re.split(r";|,\s+(?:who|and\s+(?:the\s+)?(?:brother|sister|grandson|granddaughter))\b", rest)[0]
    joint = _JOINT.search(rest)
    persons = [sp for sp in reading.sent_spans[si] if sp.kind == "person" and key(sp.text) != title]
    first = _name_in(s, m.end(), m.end() + (joint.start() if joint else len(rest)), persons)
    if joint is None:
        return first if relation == "father" else None
    second = _name_in(s, m.end() + joint.end(), m.end() + len(rest), persons)
    # the mother named first: "daughter of Princess Madeleine and Christopher O'Neill", or
    # "son of Margaretha van Mechelen and Maurice, Prince of Orange", whose page says "he"
    one = _gender(first, s[m.end() : m.end() + joint.start()], reading)
    two = _gender(second, s[m.end() + joint.end() : m.end() + len(rest)], reading)
    if (one == "f" or two == "m") and one != "m" and two != "f":
        first, second = second, first
    return first if relation == "father" else second


def canonical(name: str, reading: Reading) -> str:
    """The title of the page of ``name``, where the index has one, else ``name``.

    The name as a passage writes it and the page's title differ in their tails: "Maria
    Feodorovna of Russia" / "Maria Feodorovna", "Archduke Otto von Habsburg" / "Otto von
    Habsburg", "Edmund Grey" / "Edmund Grey, 1st Earl of Kent" (the index's lookup finds a page
    by the name before its comma). Forms of one word are not looked up: "John" is many pages.
    """
    forms = [name, re.split(r",\s", name, maxsplit=1)[0], _HONORIFIC_ANY.sub("", name)]
    forms.append(re.split(r"\s+(?:of|de|von)\s+", forms[1], maxsplit=1)[0])
    titles = {key(p.title): p.title for p in reading.passages}
    for p in reading.passages:  # "Maria Feodorovna (Dagmar of Denmark)": by its name too
        titles.setdefault(key(p.title.split("(", 1)[0]), p.title)
    for form in dict.fromkeys(forms):
        k = key(form)
        if len(k.split()) < 2:
            continue
        title = titles.get(k)
        if title is None and reading.lookup is not None:
            found = reading.lookup(form)
            title = found.title if found is not None else None
        if title:
            return re.sub(r"\s*\([^()]*\)\s*$", "", title).strip() or name
    return name


def related(pi: int, relation: str, reading: Reading) -> tuple[str | None, int | None]:
    """The person of ``relation`` named in passage ``pi`` (its director, father, spouse), and the sentence."""
    cues = _STEMS.get(relation, (relation[:5],))
    title = key(reading.passages[pi].title)
    for si in sentences_of(pi, reading):
        s = reading.sentences[si]
        low = s.lower()
        # the most specific cue first: "written by Lee Hall ... music composed by Stephen Warbeck"
        at = next((low.find(c) for c in cues if c in low), None)
        if at is None:
            continue
        persons = [sp for sp in reading.sent_spans[si] if sp.kind == "person" and key(sp.text) != title]
        if relation in ("father", "mother") and _PARENTS.search(s) and not re.search(relation, low):
            parent = _parent(s, si, relation, reading, title)
            if parent:
                return parent, si
        if relation in WORK_RELATIONS:
            after = [sp for sp in persons if sp.start >= at]
            if after:
                return full_name(s, after[0].start, after[0].end), si
            byname = name_by(s, at)  # "directed by Charlie Day", which spaCy tags as a date
            if byname is not None and passage_of(byname, reading) is not None:
                return byname, si
        if persons:
            near = min(persons, key=lambda sp: abs(sp.start - at))
            return full_name(s, near.start, near.end), si
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
        # "6 June 1906, Graz – 2 November 1994, Paris", "August 21, 1901 Oklahoma City, Oklahoma- April 7, 1988 ..."
        halves = re.split(
            r"\s[\u2013\u2014-]\s|[\u2013\u2014]|(?<=[a-z])-\s+(?=[A-Z0-9])", m.group(1), maxsplit=1
        )
        if len(halves) != 2:
            continue
        lo = m.start(1) + (0 if which == 0 else m.group(1).find(halves[1]))
        hi = lo + len(halves[which])
        for sp in reading.sent_spans[si]:
            if sp.kind == "place" and lo <= sp.start < hi:
                return sp.text, si
    return None, None


_BURIED = re.compile(r"\b(?:buried|interred|entombed|laid to rest)\b", re.IGNORECASE)
_STUDIED = re.compile(
    r"\b(?:educated|studied|graduated|graduate|attended|alumnus|alumna|enrolled|degree|studies)\b",
    re.IGNORECASE,
)
_WORKED = re.compile(
    r"\b(?:worked|works|work|employed|professor|lecturer|taught|teaches|joined|fellow|researcher)\b",
    re.IGNORECASE,
)
_AWARD = re.compile(
    r"(?:[A-Z][\w'&.-]*\s+)*(?:Award|Awards|Prize|Medal|Hall of Fame)\b"
    r"(?:\s+for\s+(?:[A-Z][\w'&.-]*\s*)+)?"
)


def _after(
    pi: int, cue: re.Pattern[str], kinds: tuple[str, ...], reading: Reading
) -> tuple[str | None, int | None]:
    """The first span of ``kinds`` within 80 characters after ``cue`` in passage ``pi``'s sentences."""
    for si in sentences_of(pi, reading):
        s = reading.sentences[si]
        for m in cue.finditer(s):
            spans = [
                sp for sp in reading.sent_spans[si] if sp.kind in kinds and 0 <= sp.start - m.end() <= 80
            ]
            if spans:
                return spans[0].text, si
    return None, None


def attribute_of(pi: int, attribute: str, reading: Reading) -> tuple[str | None, int | None]:
    """Read ``attribute`` from passage ``pi`` (a person's page)."""
    if attribute == "burial_place":
        return _after(pi, _BURIED, ("place", "org"), reading)
    if attribute == "education":
        return _after(pi, _STUDIED, ("org", "place"), reading)
    if attribute == "employer":
        return _after(pi, _WORKED, ("org",), reading)
    if attribute == "award":
        for sk in sentences_of(pi, reading):
            prize = _AWARD.search(reading.sentences[sk])
            if prize is not None:
                return prize.group(0).strip().rstrip(".,;"), sk
        return None, None
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
        # "Hans J. Salter (born in Lviv) was an Austrian composer": the nationality, else a place
        for kinds in (("norp",), ("place",)):
            for si in sentences_of(pi, reading)[:2]:
                for sp in reading.sent_spans[si]:
                    if sp.kind in kinds:
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
    for step, relation in enumerate(relations, 1):
        found, si = related(pi, relation, reading)
        if found is None or si is None:
            return None
        name = canonical(found, reading)
        cited.append(si)
        if step == len(relations) and attribute == "person":
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
