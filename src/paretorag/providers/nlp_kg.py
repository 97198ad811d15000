"""spaCy extraction for the knowledge graphs without an LLM (unified framework §4, Table 2).

The LLM-free backend of the ``kg`` / ``tkg`` / ``rkg`` and ``passage_graph`` builders.
One pass of ``en_core_web_sm`` (tagger, dependency parser, NER; no attribute ruler, the
lemmatizer's rule tables called only for verbs and plural nouns, memoized) gives, per
text (:class:`KGExtraction`):

- ``sentences``: the sentence texts (relation and entity descriptions);
- ``entities``: named entities ``(name, label, sentence)``, numeric labels skipped;
- ``nouns``: noun phrases outside entities ``(name, sentence)``: a noun head with its
  compound / adjective / possessive-noun modifiers (``doc.noun_chunks`` needs the
  attribute ruler's coarse tags, which this pipeline does not run);
- ``triples``: dependency subject-verb-object triples ``(subject, relation, object,
  sentence, object head lemma)``: the relation is the verb lemma, plus the preposition
  for a prepositional object ("bear in"); conjoined subjects / objects are expanded, a
  conjoined verb inherits its head's subjects; pronoun arguments are dropped (no
  coreference).

Names are normalized like E2GraphRAG's vertices (:func:`kg_name`). Extraction runs in
worker processes (:mod:`paretorag.providers.nlp_workers`) and is memoized per text in
this process, so ``kg``, ``tkg``, ``rkg`` and ``passage_graph`` built in one run share one
spaCy pass.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .counting import record
from .nlp import MODEL, _NounRules, load_spacy

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Token

COMPONENT = "paretorag_kg"
EXTRACT_VERSION = 1  # part of the per-chunk parse cache key: bump when the extraction output changes
KEY = "paretorag.kg"
SKIP_LABELS = frozenset({"CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY"})
_NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS"})
_MOD_DEPS = frozenset({"compound", "amod", "nmod"})
_SUBJ_DEPS = frozenset({"nsubj", "nsubjpass", "csubj"})
_OBJ_DEPS = frozenset({"dobj", "attr", "oprd", "dative", "acomp"})
_PREP_DEPS = frozenset({"prep", "agent"})
_NON_WORD = re.compile(r"[\W_]+")
_ARTICLES = ("the ", "a ", "an ")


def kg_name(text: str) -> str:
    """A node name: lower case, possessive and punctuation removed, a leading article dropped.

    Unlike :func:`paretorag.providers.nlp.normalize`, dates and numbers are kept
    ("1961"): KG triples link to them. Returns ``""`` for text without a letter or digit.

    Examples
    --------
    >>> kg_name("The Eiffel Tower's"), kg_name("11 November 875"), kg_name("--")
    ('eiffel tower', '11 november 875', '')
    """
    s = text.lower().replace("\u2019", "'").replace("'s ", " ")
    s = s[:-2] if s.endswith("'s") else s
    s = " ".join(_NON_WORD.sub(" ", s).split())
    for art in _ARTICLES:
        if s.startswith(art):
            s = s[len(art) :]
            break
    return s if any(ch.isalnum() for ch in s) else ""


@dataclass(frozen=True)
class KGExtraction:
    """What spaCy found in one text (see the module docstring); JSON-friendly lists."""

    sentences: list[str]
    entities: list[tuple[str, str, int]]
    nouns: list[tuple[str, int]]
    triples: list[tuple[str, str, str, int, str]]
    n_tokens: int

    def to_json(self) -> list[Any]:
        return [self.sentences, self.entities, self.nouns, self.triples]

    @classmethod
    def from_json(cls, data: list[Any], n_tokens: int) -> KGExtraction:
        sents, ents, nouns, triples = data
        return cls(
            list(sents),
            [(str(a), str(b), int(c)) for a, b, c in ents],
            [(str(a), int(b)) for a, b in nouns],
            [(str(a), str(b), str(c), int(d), str(e)) for a, b, c, d, e in triples],
            n_tokens,
        )


class _KGComponent:
    """Pipeline component writing a :class:`KGExtraction` (as JSON lists) into ``doc.user_data``."""

    def __init__(self, nlp: Language) -> None:
        self._nlp = nlp
        self._rules: dict[str, _NounRules] = {}
        self._memo: dict[tuple[str, str], str] = {}

    def _lemma(self, tok: Token, pos: str) -> str:
        low = tok.lower_
        if (pos == "noun" and tok.tag_ != "NNS") or (pos == "verb" and tok.tag_ in ("VB", "VBP")):
            return low
        key = (low, pos)
        hit = self._memo.get(key)
        if hit is None:
            if pos not in self._rules:
                self._rules[pos] = _NounRules(self._nlp.get_pipe("lemmatizer"), pos)
            hit = self._memo[key] = self._rules[pos].lemma(low)
        return hit

    def _phrase(self, head: Token) -> str:
        start = head.i
        for child in head.lefts:
            if child.dep_ in _MOD_DEPS or (child.dep_ == "poss" and child.tag_ in _NOUN_TAGS):
                start = min(start, child.left_edge.i)
        words = [t.lower_ for t in head.doc[start : head.i]] + [self._lemma(head, "noun")]
        return kg_name(" ".join(words))

    def __call__(self, doc: Doc) -> Doc:
        sents = list(doc.sents)
        sent_of = [0] * len(doc)
        for si, s in enumerate(sents):
            for i in range(s.start, s.end):
                sent_of[i] = si
        ent_name: dict[int, str] = {}
        entities: list[tuple[str, str, int]] = []
        for ent in doc.ents:
            if ent.label_ in SKIP_LABELS:
                continue
            name = kg_name(ent.text)
            if name:
                entities.append((name, ent.label_, sent_of[ent.start]))
                for i in range(ent.start, ent.end):
                    ent_name[i] = name
        names: dict[int, str] = {}

        def node(tok: Token) -> str:
            if tok.i in ent_name:
                return ent_name[tok.i]
            if tok.tag_ not in _NOUN_TAGS:
                return ""
            if tok.i not in names:
                names[tok.i] = self._phrase(tok)
            return names[tok.i]

        nouns: list[tuple[str, int]] = []
        for tok in doc:
            if tok.tag_ in _NOUN_TAGS and tok.i not in ent_name and tok.dep_ not in _MOD_DEPS:
                name = node(tok)
                if name:
                    nouns.append((name, sent_of[tok.i]))
        triples: list[tuple[str, str, str, int, str]] = []
        for verb in doc:
            if not verb.tag_.startswith("VB") or verb.dep_ in ("aux", "auxpass"):
                continue
            subjects = [c for c in verb.children if c.dep_ in _SUBJ_DEPS]
            if not subjects and verb.dep_ == "conj":
                subjects = [c for c in verb.head.children if c.dep_ in _SUBJ_DEPS]
            if not subjects and verb.dep_ in ("relcl", "acl") and verb.head.tag_ in _NOUN_TAGS:
                subjects = [verb.head]
            rel = self._lemma(verb, "verb")
            objects: list[tuple[str, Token]] = [(rel, c) for c in verb.children if c.dep_ in _OBJ_DEPS]
            for prep in verb.children:
                if prep.dep_ in _PREP_DEPS:
                    objects.extend((f"{rel} {prep.lower_}", c) for c in prep.children if c.dep_ == "pobj")
            for subj in [x for t in subjects for x in (t, *t.conjuncts)]:
                sname = node(subj)
                if not sname:
                    continue
                for r, o in objects:
                    for obj in (o, *o.conjuncts):
                        oname = node(obj)
                        if oname and oname != sname:
                            head = self._lemma(obj, "noun") if obj.tag_ in _NOUN_TAGS else obj.lower_
                            triples.append((sname, r, oname, sent_of[verb.i], head))
        doc.user_data[KEY] = [[s.text.strip() for s in sents], entities, nouns, triples]
        return doc


def _register_factory() -> None:
    from spacy.language import Language

    if not Language.has_factory(COMPONENT):
        Language.factory(COMPONENT, func=lambda nlp, name: _KGComponent(nlp))


_LOCK = threading.Lock()
_COMPUTE = threading.Lock()  # serializes extractions, so that parallel builders share one pass
_PIPELINES: dict[str, Language] = {}
_MEMO: dict[str, KGExtraction] = {}
_MEMO_MAX = 500_000


def load_kg_pipeline(model: str = MODEL) -> Language:
    """The spaCy pipeline for KG extraction (tagger, parser, NER + :class:`_KGComponent`)."""
    with _LOCK:
        nlp = _PIPELINES.get(model)
        if nlp is not None:
            return nlp
        nlp = load_spacy(
            "the LLM-free knowledge graphs",
            model,
            exclude=["senter", "attribute_ruler"],
            disable=["lemmatizer"],
        )
        _register_factory()
        nlp.add_pipe(COMPONENT)
        _PIPELINES[model] = nlp
        return nlp


def run_kg_pipe(nlp: Language, texts: list[str], batch_size: int) -> list[tuple[list[Any], int]]:
    """``[payload, n_tokens]`` per text, computed in this process (a worker's loop)."""
    return [(doc.user_data[KEY], len(doc)) for doc in nlp.pipe(texts, batch_size=batch_size)]


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def extract_kg(texts: Sequence[str], *, n_process: int = 1, batch_size: int = 16) -> list[KGExtraction]:
    """:class:`KGExtraction` of each text, in order; texts seen before in this process are free.

    With ``n_process > 1`` and enough texts, worker processes share the work.
    """
    if isinstance(n_process, bool) or not isinstance(n_process, int) or n_process < 1:
        raise ConfigError(f"n_process must be a positive integer, got {n_process!r}")
    keys = [_key(t) for t in texts]
    # one extraction at a time: the KG, TKG and RKG builders run in parallel threads on the
    # same chunks; the second and third wait for the first and find its results memoized
    with _COMPUTE:
        return _extract(keys, texts, n_process, batch_size)


def _extract(keys: list[str], texts: Sequence[str], n_process: int, batch_size: int) -> list[KGExtraction]:
    with _LOCK:
        found = {k: _MEMO[k] for k in keys if k in _MEMO}
    todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
    if todo:
        items = list(todo.items())
        batch = [t for _, t in items]
        record("spacy_docs", len(batch))
        procs = min(n_process, len(batch) // (4 * batch_size))
        if procs <= 1:
            out = run_kg_pipe(load_kg_pipeline(), batch, batch_size)
        else:
            from .nlp_workers import parallel_payloads

            settings = {"entry": "paretorag.providers.nlp_kg:kg_worker", "batch_size": batch_size}
            out = list(parallel_payloads(batch, settings, procs))
        for (k, _), (payload, n) in zip(items, out, strict=True):
            found[k] = KGExtraction.from_json(payload, n)
        with _LOCK:
            if len(_MEMO) + len(items) > _MEMO_MAX:
                _MEMO.clear()
            _MEMO.update((k, found[k]) for k, _ in items)
    return [found[k] for k in keys]


def kg_worker(cfg: dict[str, Any]) -> Callable[[list[str]], list[Any]]:
    """The knowledge-graph extraction process's work (:mod:`paretorag.providers.nlp_workers`)."""
    kg = load_kg_pipeline()
    return lambda texts: run_kg_pipe(kg, texts, cfg["batch_size"])


__all__ = [
    "EXTRACT_VERSION",
    "SKIP_LABELS",
    "KGExtraction",
    "extract_kg",
    "kg_name",
    "kg_worker",
    "load_kg_pipeline",
    "run_kg_pipe",
]
