"""spaCy named entities with their sentences, as LinearRAG extracts them (LinearRAG §3.1).

LinearRAG's Tri-Graph links every named entity to the sentences and passages it occurs
in; the official code (``src/ner.py``) keeps every entity label except ``ORDINAL`` and
``CARDINAL``, the entity text as written, and the text of the sentence spaCy places it
in. Questions go through the same recognizer, entities lower-cased.

The pipeline is ``en_core_web_sm`` (:data:`~paretorag.providers.nlp.MODEL`, installed
as a package, nothing downloaded) with its ``tok2vec``, ``ner`` and the statistical
``senter`` for sentences; the tagger, parser, attribute ruler and lemmatizer are not
loaded. The official code uses ``en_core_web_trf`` (a transformer, several times
slower per token on a CPU).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from .counting import record
from .nlp import MODEL, load_spacy

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

SKIP_LABELS: tuple[str, ...] = ("ORDINAL", "CARDINAL")  # the official src/ner.py

# one passage: (sentence text, distinct entity texts in it in order of mention) per sentence
# that holds an entity, in order
SentenceEntities = list[tuple[str, list[str]]]

_LOCK = threading.Lock()
_PIPELINES: dict[str, Language] = {}


def load_ner_pipeline(model: str = MODEL) -> Language:
    """``tok2vec``, ``senter`` and ``ner`` of the spaCy model (loaded once per process).

    Raises
    ------
    MissingDependencyError
        spaCy or the model package is not installed (names the package to install).
    """
    with _LOCK:
        nlp = _PIPELINES.get(model)
        if nlp is not None:
            return nlp
        nlp = load_spacy(
            "LinearRAG's entity graph", model, exclude=["tagger", "parser", "attribute_ruler", "lemmatizer"]
        )
        nlp.enable_pipe("senter")
        _PIPELINES[model] = nlp
        return nlp


def sentence_entities(doc: Doc, skip: Sequence[str] = SKIP_LABELS) -> SentenceEntities:
    """The sentences of ``doc`` that hold an entity, each with its distinct entity texts."""
    out: dict[str, list[str]] = {}
    for ent in doc.ents:
        if ent.label_ in skip:
            continue
        ents = out.setdefault(ent.sent.text, [])
        if ent.text not in ents:
            ents.append(ent.text)
    return list(out.items())


def extract_sentence_entities(
    texts: Iterable[str], *, batch_size: int = 16, skip: Sequence[str] = SKIP_LABELS, model: str = MODEL
) -> Iterator[tuple[SentenceEntities, int]]:
    """:func:`sentence_entities` and the token count of each text, in input order (streams)."""
    nlp = load_ner_pipeline(model)
    texts = list(texts)
    record("spacy_docs", len(texts))
    for doc in nlp.pipe(texts, batch_size=batch_size):
        yield sentence_entities(doc, skip), len(doc)


def question_entities(text: str, *, skip: Sequence[str] = SKIP_LABELS, model: str = MODEL) -> list[str]:
    """A question's distinct entity texts, lower-cased, in order of mention (official ``question_ner``)."""
    nlp = load_ner_pipeline(model)
    doc = nlp.make_doc(text)
    for name, proc in nlp.pipeline:
        if name != "senter":  # one question is one unit: no sentences needed
            doc = proc(doc)
    seen: dict[str, None] = {}
    for ent in doc.ents:
        if ent.label_ not in skip:
            seen.setdefault(ent.text.lower(), None)
    return list(seen)


__all__ = [
    "SKIP_LABELS",
    "SentenceEntities",
    "extract_sentence_entities",
    "load_ner_pipeline",
    "question_entities",
    "sentence_entities",
]
