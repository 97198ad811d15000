"""The spaCy readings of a question that retrieval operators ask for, through the index view.

Operators never import spaCy or its pipelines: they call ``index.nlp`` (an
:class:`~paretorag.retrieval.query.IndexView` attribute), so a view decides how questions are
parsed and a test view can answer without a model. Each pipeline is loaded once per
process, at the first question that needs it.

- :meth:`QuestionNLP.terms`: named entities, then noun chunks (unified framework §6.3,
  question conversion);
- :meth:`QuestionNLP.entities`: LinearRAG's question entities (LinearRAG §3.1);
- :meth:`QuestionNLP.kg_names`: the question's entity and noun names as the offline
  knowledge graph normalizes them (HippoRAG 2's seeds, offline);
- :meth:`QuestionNLP.extractor`: E2GraphRAG's entity extractor with the settings the
  entity graph was built with (§3.2: the same extractor for the corpus and the question).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .nlp import MODEL, load_spacy

if TYPE_CHECKING:
    from spacy.language import Language

    from .nlp import EntityExtractor

_SKIP_LABELS = frozenset({"CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY"})
_LEAD_POS = frozenset({"DET", "PRON"})
_LOCK = threading.Lock()
_NLP: dict[str, Language] = {}


def parser(model: str = MODEL) -> Language:
    """spaCy with tagger, parser and NER (noun chunks need the parser), loaded once per process.

    The offline reader runs the same pipeline with its entity recogniser alone
    (:func:`paretorag.answering.reader.spans.pipeline`), so a query loads the model once.
    """
    with _LOCK:
        nlp = _NLP.get(model)
        if nlp is None:
            nlp = _NLP[model] = load_spacy("question.terms", model, exclude=["lemmatizer"])
        return nlp


def spacy_terms(text: str, *, noun_chunks: bool = True) -> list[str]:
    """Named entities (numbers and amounts left out), then noun chunks without a leading
    determiner or pronoun, of ``text``; each once, as first written."""
    doc = parser()(text)
    out: dict[str, str] = {}
    for ent in doc.ents:
        if ent.label_ not in _SKIP_LABELS:
            out.setdefault(ent.text.strip().lower(), ent.text.strip())
    if noun_chunks:
        for chunk in doc.noun_chunks:
            toks = list(chunk)
            while toks and toks[0].pos_ in _LEAD_POS:
                toks = toks[1:]
            phrase = " ".join(t.text for t in toks).strip()
            if phrase and any(ch.isalnum() for ch in phrase):
                out.setdefault(phrase.lower(), phrase)
    return [t for t in out.values() if t]


class QuestionNLP:
    """What operators may ask spaCy about a question (see the module docstring)."""

    def terms(self, text: str, *, noun_chunks: bool = True) -> list[str]:
        return spacy_terms(text, noun_chunks=noun_chunks)

    def entities(self, text: str, *, skip: Sequence[str]) -> list[str]:
        from .nlp_ner import question_entities

        return question_entities(text, skip=skip)

    def kg_names(self, text: str) -> set[str]:
        from .nlp_kg import extract_kg, kg_name

        ex = extract_kg([text])[0]
        return {kg_name(n) for n, _, _ in ex.entities} | {kg_name(n) for n, _ in ex.nouns}

    def extractor(self, **settings: Any) -> EntityExtractor:
        from .nlp import EntityExtractor

        return EntityExtractor(**settings)


__all__ = ["QuestionNLP", "spacy_terms"]
