"""Named entities and date/number spans of sentences (:mod:`paretorag.providers.sentence_spans`).

The computation is a provider, so the index's reader-spans builder
(:mod:`paretorag.graphs.reader_spans`) runs the same function at index time.
"""

from __future__ import annotations

from ...providers.sentence_spans import (
    DATE,
    LABEL_TYPE,
    YEAR,
    Span,
    parse,
    pipeline,
    question_entities,
    spans,
)

__all__ = ["DATE", "LABEL_TYPE", "YEAR", "Span", "parse", "pipeline", "question_entities", "spans"]
