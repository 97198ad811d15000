"""The offline reader: a short answer with its evidence, or "not in the documents".

Stages (each its own module):

1. question analysis (:mod:`~paretorag.answering.reader.question`): wh-type, expected answer
   type, named options, the question's entities and relation terms;
2. candidates from the numbered passages (:mod:`~paretorag.answering.reader.candidates`): named
   entities, dates, numbers, titles, copular complements, with their sentences;
3. features per candidate and a learned ranker over them (:mod:`~paretorag.answering.reader.ranker`,
   LightGBM trained on the train splits only by ``paretorag train-reader``);
4. comparisons and yes/no read attributes of each named option from its own passage
   (:mod:`~paretorag.answering.reader.compare`); compositional questions ("where did X's father
   die?") follow their chain from passage to passage (:mod:`~paretorag.answering.reader.chain`);
5. abstention: the top candidate's probability is the confidence; below the threshold
   chosen on the training questions the reader says the documents do not contain the
   answer and shows the best evidence sentences instead.

"Why" and open "how" questions have no short span: their answer is the evidence
sentence that best matches the question.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ...providers.base import Completion, Embedder, Request
from ...providers.extractive import Candidates, ExtractiveLLM, content_terms
from ...providers.extractive import candidates as extractive_candidates
from ...textutil import reading_sentences
from .candidates import Passage, Reading, admitted, features, gather, key, read_passages
from .chain import chain
from .compare import Verdict, choose, in_common, yes_no
from .neural import configured_span_model, shipped_span_model
from .options import lettered_options, read_options
from .question import QuestionInfo, analyze, known_entities
from .ranker import DEFAULT_THRESHOLD, Ranker, load, read_meta
from .spans import question_entities
from .stored import StoredSpans

NOT_FOUND = "The documents do not contain an answer to this question."
_WHAT_HAPPENS = re.compile(r"^\s*what\s+(?:happens|happened|will happen|does\s+\S+\s+do)\b", re.IGNORECASE)
# a question that asks for a list or a description ("What are the symptoms of ...?", "List three
# ...", "Describe ..."): its answer is the sentence that holds the span read, not the span
_DESCRIBE = re.compile(
    r"^\s*(?:(?:what|which)\s+(?:\w+\s+){0,3}?(?:are|were)\b"
    r"|(?:list|name|describe|explain|summari[sz]e|outline|identify|compare)\b)",
    re.IGNORECASE,
)
# a request to write something ("Imagine you are ...", "Rewrite ... as a referral letter", "As a
# pulmonologist, write ..."): no span or sentence answers it; several sentences of the passages do
_COMPOSE = re.compile(
    r"^\s*(?:imagine|pretend|reframe|rewrite|transform|write|draft|compose|create|prepare|produce"
    r"|generate|summari[sz]e|convert|turn|assume\s+(?:the\s+role|you)|you\s+are|you're|acting\s+as"
    r"|in\s+the\s+role\s+of|as\s+an?\s+[\w\s/()-]{1,100}?,\s*(?:you|i|write|draft|prepare|create"
    r"|compose|summari[sz]e|explain|describe|outline|rewrite|develop|design|construct|provide|give)\b)",
    re.IGNORECASE,
)
COMPOSE_SENTENCES = 5  # sentences in the answer to a writing request (chosen on medical@train)
SPAN_MIN = 0.5  # in first / fallback mode: the span model's probability (a softmax over its candidates)
# in compare mode a span the other stages did not read needs at least this probability
SPAN_FLOOR = 0.1
PROSE_CHARS = 400  # a sentence answer is at most this long (else the span answers)
SENTENCE_MIN = 0.35  # a why/how evidence sentence needs at least this question similarity to count as found
# scores every sentence of long chunks for a sentence answer, as the ``extractive`` answer does
_SENTENCE_SCORER = ExtractiveLLM()
CHOICE_MIN = 0.25  # a choice or yes/no read from the passages at least this surely is answered


@dataclass(frozen=True)
class Evidence:
    """A sentence that supports the answer and the number ``[n]`` of its passage."""

    sentence: str
    n: int

    def to_json(self) -> dict[str, Any]:
        return {"sentence": self.sentence, "passage": self.n}


@dataclass(frozen=True)
class ReaderResult:
    """What the reader makes of a question and its passages.

    ``answer`` is the short answer ("" when not found); ``evidence`` the supporting
    sentences (or, when not found, the closest ones); ``confidence`` in [0, 1];
    ``kind`` is ``span``, ``chain``, ``choice``, ``yesno``, ``common`` (what two named things
    share), ``option`` (a lettered option of a multiple-choice question) or ``sentence``.
    """

    answer: str
    evidence: tuple[Evidence, ...]
    confidence: float
    found: bool
    kind: str
    expected: str = ""
    trace: dict[str, Any] = field(default_factory=dict)
    added: tuple[
        Passage, ...
    ] = ()  # passages fetched by title for a comparison, numbered after the given ones

    @property
    def text(self) -> str:
        """The answer as a user reads it: the short answer first, then the cited sentences."""
        lines = [f"{e.sentence} [{e.n}]" for e in self.evidence]
        if not self.found:
            head = NOT_FOUND
            return head + ("\nClosest evidence:\n" + "\n".join(lines) if lines else "")
        if self.kind == "sentence":
            return "\n".join(lines)
        cites = "".join(f"[{n}]" for n in dict.fromkeys(e.n for e in self.evidence))
        return f"{self.answer} {cites}".rstrip() + ("\n\n" + "\n".join(lines) if lines else "")


class Reader:
    """Reads numbered passages and answers with a short span, an option, yes/no, or abstains.

    Parameters
    ----------
    embedder : Embedder, optional
        Scores sentence similarity to the question (an index binds its own).
    model : path, optional
        Folder of a trained model (``ranker.txt`` + ``reader.json``); default: the shipped one.
    threshold : float, optional
        Confidence below which the reader abstains; default: the model's own (chosen on
        the training questions).
    evidence_sentences : int
        Supporting sentences shown with an answer (at most).
    span_model : path, optional
        A neural span model folder (``paretorag train-reader --neural``); default
        ``$PARETORAG_SPAN_MODEL``, else the shipped one (``paretorag/data/span``).
    span_mode : str, optional
        How its answer is used (default ``$PARETORAG_SPAN_MODE``, else ``compare``):
        ``compare`` weighs its spans against the chain's or the candidate ranker's answer,
        their probabilities added where they read the same answer (:meth:`_combined`);
        ``fallback`` takes its span where the ranker finds nothing above its threshold and
        ``first`` before the ranker, each at probability ``span_min`` or more; ``off`` never
        loads it.
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        model: Path | str | None = None,
        threshold: float | None = None,
        evidence_sentences: int = 2,
        span_model: Path | str | None = None,
        span_mode: str | None = None,
        span_min: float = SPAN_MIN,
    ) -> None:
        self.embedder = embedder
        self.model = model
        self._threshold = threshold
        self.evidence_sentences = evidence_sentences
        self._ranker: Ranker | None = None
        self._meta: dict[str, Any] | None = None
        # the neural span model: a folder written by `paretorag train-reader --neural`, given
        # here or in $PARETORAG_SPAN_MODEL, else the shipped one
        self.span_model_dir, self.span_mode = configured_span_model(span_model, span_mode)
        self.span_min = span_min
        self._span_model: Any = None

    @property
    def ranker(self) -> Ranker:
        if self._ranker is None:
            self._ranker = load(self.model)
        return self._ranker

    @property
    def meta(self) -> dict[str, Any]:
        """The model's ``reader.json`` (read without loading the model)."""
        if self._ranker is not None:
            return self._ranker.meta
        if self._meta is None:
            self._meta = read_meta(self.model)
        return self._meta

    @property
    def threshold(self) -> float:
        if self._threshold is not None:
            return self._threshold
        return float(self.meta.get("threshold", DEFAULT_THRESHOLD))

    def analyze(self, question: str, stored: StoredSpans | None = None) -> QuestionInfo:
        """The question's analysis. Its entities come from ``stored``'s names (the corpus's
        entities, found at index time by the same recogniser) when they cover every
        capitalized word of the question (:func:`~paretorag.answering.reader.question.known_entities`),
        so such a question loads no spaCy; otherwise the question is parsed."""
        entities = known_entities(question, stored.names()) if stored is not None else None
        return analyze(question, question_entities(question) if entities is None else entities)

    def read(
        self,
        question: str,
        passages: Sequence[Passage],
        lookup: Callable[[str], Passage | None] | None = None,
        stored: StoredSpans | None = None,
    ) -> ReaderResult:
        """Answer ``question`` from ``passages`` (best first, numbered ``[n]``).

        ``lookup`` finds a passage by its title in the index: comparisons use it for an
        option or a bridge entity (a film's director) missing from ``passages``; the
        passages it adds are in :attr:`ReaderResult.added`. ``stored``: the index's
        sentences and spans of its chunks (:func:`~paretorag.answering.reader.stored.stored_spans`),
        so that passages which are whole chunks are not split and parsed again.
        """
        stem, options = lettered_options(question)
        if options:
            return self._option(stem, options, passages)
        if _COMPOSE.match(question) and self.embedder is not None:
            composed = self._composed(question, passages)
            if composed is not None:
                return composed
        result = self._read(question, passages, lookup, stored)
        return self._best_sentence(question, result, passages)

    def _composed(self, question: str, passages: Sequence[Passage]) -> ReaderResult | None:
        """A writing request ("Imagine you are an oncologist. Write a treatment plan for ...",
        "Rewrite ... as a referral letter") answered as the :data:`COMPOSE_SENTENCES` best prose
        sentences of the passages, scored as the ``extractive`` answer scores them, in the
        passages' order: the reader cannot write, and a span or a single sentence says a
        fraction of what such a request asks for. Withheld, with the closest sentences, when
        the best one's question similarity is under :data:`SENTENCE_MIN`."""
        cands, ranked = _prose_sentences(question, passages, self.embedder)
        chosen: list[int] = []
        seen: set[str] = set()
        for i in ranked:
            k = " ".join(cands.sentences[i].lower().split())
            if k not in seen:
                seen.add(k)
                chosen.append(i)
            if len(chosen) == COMPOSE_SENTENCES:
                break
        if not chosen:
            return None
        similarity = float(np.clip(cands.dense[chosen[0]], 0.0, 1.0))
        found = similarity >= SENTENCE_MIN
        in_order = sorted(chosen, key=lambda i: (int(cands.passage[i]), int(cands.position[i])))
        evidence = tuple(_cited(cands, i, passages) for i in (in_order if found else chosen))
        return ReaderResult(
            " ".join(e.sentence for e in evidence) if found else "",
            evidence,
            similarity,
            found,
            "sentence",
            "phrase",
            trace={"composed": len(evidence)},
        )

    def _option(self, stem: str, options: tuple[str, ...], passages: Sequence[Passage]) -> ReaderResult:
        """A multiple-choice question answered with the lettered option whose words the passages
        say near the question, cited by the sentence that says most of them
        (:mod:`~paretorag.answering.reader.options`); its confidence is the option's lead over
        the runner-up (0 where options that tie were told apart by meaning). Withheld, with the
        sentences nearest the question, when the passages have no sentence, or options tie and
        the reader has no embedder."""
        cands = extractive_candidates(stem, [p.text for p in passages], self.embedder)
        reading = read_options(stem, options, cands, self.embedder)
        trace = {"options": [round(float(x), 3) for x in reading.scores]}
        if reading.chosen is None or reading.sentence is None:
            evidence = tuple(_cited(cands, i, passages) for i in reading.near[: self.evidence_sentences])
            return ReaderResult("", evidence, 0.0, False, "option", "option", trace=trace)
        letter = chr(ord("A") + reading.chosen)
        return ReaderResult(
            f"({letter}) {options[reading.chosen]}",
            (_cited(cands, reading.sentence, passages),),
            float(np.clip(reading.margin, 0.0, 1.0)),
            True,
            "option",
            "option",
            trace=trace,
        )

    def _read(
        self,
        question: str,
        passages: Sequence[Passage],
        lookup: Callable[[str], Passage | None] | None,
        stored: StoredSpans | None,
    ) -> ReaderResult:
        info = self.analyze(question, stored)
        # only why / how / what-happens questions read the sentences' similarity to the question:
        # a whole sentence answers them
        sentence = info.wh in ("why", "how") or bool(_WHAT_HAPPENS.match(question))
        embedder = self.embedder if sentence else None
        reading = read_passages(info, passages, embedder, lookup=lookup, stored=stored)
        if not reading.sentences or not info.terms:
            return ReaderResult("", (), 0.0, False, "span", info.expected)
        order = np.argsort(-reading.relevance, kind="stable")
        if info.expected in ("choice", "yesno"):
            n_given = len(reading.passages)
            v = choose(info, reading) if info.expected == "choice" else yes_no(info, reading)
            return self._verdict(v, info, reading, order, n_given, info.expected)
        if sentence:
            # a Markdown heading ("# Operations: crashes ...") is like the question, but says
            # nothing; nor does a table row ("| `src/` | packages by stage ... |")
            prose = [int(i) for i in order if not reading.sentences[int(i)].lstrip().startswith(("#", "|"))]
            best = prose[0] if prose else int(order[0])
            # the sentence's similarity to the question (its term coverage without an embedder)
            sim = reading.dense[best] if self.embedder is not None else reading.terms[best]
            conf = float(np.clip(sim, 0.0, 1.0))
            ev = self._evidence(
                [best, *(int(i) for i in order if int(i) != best)],
                reading,
                1 if conf >= SENTENCE_MIN else self.evidence_sentences,
            )
            return ReaderResult(
                reading.sentences[best] if conf >= SENTENCE_MIN else "",
                ev,
                conf,
                conf >= SENTENCE_MIN,
                "sentence",
                info.expected,
            )
        n_given = len(reading.passages)
        common = in_common(info, reading)
        if common is not None:  # "What profession did A and B both hold?"
            return self._verdict(common, info, reading, order, n_given, "common")
        followed = chain(info, reading)
        if self.span_mode == "compare":
            if followed is not None:
                base = self._verdict(followed, info, reading, order, n_given, "chain")
                if base.found:  # a chain that read every hop answers: it shows its hops
                    return base
            else:
                base = self._ranked(info, reading, order)
            combined = self._combined(question, base, reading, order, n_given, info)
            return described(question, info, combined, reading.passages)
        if followed is not None:
            return self._verdict(followed, info, reading, order, n_given, "chain")
        if self.span_mode == "first":
            read = self._span_model_read(question, reading, order, n_given, info)
            if read is not None:
                return read
        ranked = self._ranked(info, reading, order)
        if not ranked.found and self.span_mode == "fallback":
            read = self._span_model_read(question, reading, order, n_given, info)
            if read is not None:
                return read
        return ranked

    def _best_sentence(
        self, question: str, result: ReaderResult, passages: Sequence[Passage]
    ) -> ReaderResult:
        """A sentence answer from long chunks as the sentence that best answers the question.

        The stages above pick a sentence among the first sentences the reader reads of each
        chunk (:data:`~paretorag.answering.reader.candidates.Reading.max_sentences`) or the one
        that holds the span read; over 1,200-token chunks the sentence that answers is often
        further in. Where a passage is longer than :data:`SPAN_CHARS`, every sentence of the
        passages is scored as the ``extractive`` answer scores them (question similarity,
        IDF-weighted term coverage, passage rank, answer type) and the best prose sentence
        answers; the span stays in ``trace["reader"]["span"]``. A withheld why / how answer, or
        a withheld phrase or description answer, is answered so too when that sentence's
        question similarity reaches :data:`SENTENCE_MIN`, the bar of why / how answers. Where the
        evidence comes from a chunk of a long document (longer than :data:`LONG_CHUNK_CHARS`), so
        is a phrase span whose own sentence is no prose, and a yes/no question (its verdict, read
        by rules written for short encyclopaedia passages, stays in
        ``trace["reader"]["yesno_of_stage"]``): "Is imaging used in the diagnosis of BCC?" is
        answered by the guide's sentence that says how it is used.
        """
        withheld = not result.found and (
            result.kind == "sentence"
            or (result.kind == "span" and result.expected in ("phrase", "description"))
        )
        # a yes/no verdict, or a phrase span that :func:`described` left alone (its own sentence is
        # no prose: a PDF's run-on headings), read from a long chunk
        first = result.evidence[0].n if result.evidence else None
        from_long = any(p.n == first and len(p.text) > LONG_CHUNK_CHARS for p in passages)
        yesno = result.kind == "yesno" and from_long
        phrase = (
            result.found
            and result.kind == "span"
            and result.expected in ("phrase", "description")
            and from_long
        )
        if (
            not ((result.found and result.kind == "sentence") or withheld or yesno or phrase)
            or self.embedder is None
        ):
            return result
        if not any(len(p.text) > SPAN_CHARS for p in passages):
            return result
        cands, ranked = _prose_sentences(question, passages, self.embedder)
        span = key(result.answer)
        best = next((i for i in ranked if not phrase or f" {span} " in f" {key(cands.sentences[i])} "), None)
        if best is None:
            return result
        chosen = _cited(cands, best, passages)
        if phrase:
            trace = {**result.trace, "span": result.answer}
            return replace(result, answer=chosen.sentence, evidence=(chosen,), kind="sentence", trace=trace)
        if withheld or yesno:
            similarity = float(np.clip(cands.dense[best], 0.0, 1.0))
            if similarity < SENTENCE_MIN:
                return result
            said = (
                {"yesno_of_stage": result.answer}
                if yesno
                else {"withheld_span": result.trace.get("candidate", "")}
            )
            trace = {**result.trace, **said}
            return replace(
                result,
                answer=chosen.sentence,
                evidence=(chosen,),
                kind="sentence",
                found=True,
                confidence=similarity,
                trace=trace,
            )
        trace = {**result.trace, "sentence_of_stage": result.answer}
        return replace(result, answer=chosen.sentence, evidence=(chosen,), trace=trace)

    def _ranked(self, info: QuestionInfo, reading: Reading, order: np.ndarray) -> ReaderResult:
        """The candidate ranker's answer: the most probable candidate span, withheld below the threshold."""
        cands = admitted(info.expected, gather(reading))
        if not cands:
            return ReaderResult("", self._evidence(order, reading, 2), 0.0, False, "span", info.expected)
        probs = self.ranker.predict(features(info, reading, cands))
        top = int(np.argmax(probs))
        cand = cands[top]
        conf = float(probs[top])
        occ = reading.best_occurrence(cand)
        found = conf >= self.threshold
        first = [occ.sentence] if found else []
        ev = self._evidence([*first, *order], reading, self.evidence_sentences)
        return ReaderResult(
            cand.text if found else "",
            ev,
            conf,
            found,
            "span",
            info.expected,
            {"candidate": cand.text, "kind": cand.kind, "candidates": len(cands)},
        )

    @property
    def span_model(self) -> Any:
        """The neural span model (:mod:`.neural`), when one is configured and not off; else None."""
        if self._span_model is None and self.span_model_dir and self.span_mode != "off":
            from .neural import load_span_model

            self._span_model = load_span_model(self.span_model_dir)
        return self._span_model

    def _combined(
        self,
        question: str,
        base: ReaderResult,
        reading: Reading,
        order: np.ndarray,
        n_given: int,
        info: QuestionInfo,
    ) -> ReaderResult:
        """``compare`` mode: the other stages' answer (found or withheld) against the span model's.

        Each answer's support is its probability; where the span model reads the same answer
        as the chain or the ranker (:func:`same_answer`), their probabilities add up. The best
        supported answer wins; a span the others did not read must reach :data:`SPAN_FLOOR` and
        come from a window whose class head does not find "no answer" likeliest."""
        if self.span_model is None:
            return base
        texts = span_texts(question, reading.passages[:n_given])
        spans = [
            s for s in self.span_model.read(question, texts, top=3) if s.kind == "span" and s.text.strip()
        ]
        if spans:  # what the span model made of the passages, whoever answers
            read = {"span_top": round(spans[0].score, 4), "span_none": round(spans[0].no_answer, 4)}
            base = replace(base, trace={**base.trace, **read})
        theirs = base.answer or str(base.trace.get("candidate", ""))
        agree = [s for s in spans if theirs and same_answer(s.text, theirs)]
        support = base.confidence + sum(s.score for s in agree)
        others = [s for s in spans if s not in agree]
        top = max(others, key=lambda s: s.score, default=None)
        if top is not None and top.score > support and top.score >= SPAN_FLOOR and not _says_none(top):
            won = self._span_result(top, texts, reading, order, info, top.score)
            return replace(won, trace={**base.trace, **won.trace})
        if not agree:
            return base
        if base.found:  # the same answer, surer: its confidence is the two probabilities' sum
            trace = {**base.trace, "span_model": agree[0].text, "span_score": round(agree[0].score, 3)}
            return replace(base, confidence=min(1.0, support), trace=trace)
        # a withheld answer the span model reads too: answered with the span's evidence
        if support < SPAN_FLOOR or _says_none(agree[0]):
            return base
        won = self._span_result(agree[0], texts, reading, order, info, min(1.0, support))
        return replace(won, trace={**base.trace, **won.trace})

    def _span_result(
        self,
        best: Any,
        texts: list[str],
        reading: Reading,
        order: np.ndarray,
        info: QuestionInfo,
        confidence: float,
    ) -> ReaderResult:
        """The span model's answer with the sentence that holds it first among the evidence (it
        may lie past the sentences the other stages read), then the passages' best sentences."""
        # the shortest sentence or line that holds the span (a Markdown table is one "sentence")
        pieces = [x for line in texts[best.passage].splitlines() for x in reading_sentences(line)]
        holder = min((x for x in pieces if best.text in x), key=len, default=best.text)
        first = Evidence(holder, reading.passages[best.passage].n)
        rest = self._evidence(order, reading, self.evidence_sentences + 1)
        ev = (first, *(e for e in rest if e.sentence != holder))[: self.evidence_sentences]
        return ReaderResult(
            best.text.strip(),
            ev,
            float(confidence),
            True,
            "span",
            info.expected,
            {"span_model": best.text, "passage": best.passage + 1, "score": round(best.score, 3)},
        )

    def _span_model_read(
        self,
        question: str,
        reading: Reading,
        order: np.ndarray,
        n_given: int,
        info: QuestionInfo,
    ) -> ReaderResult | None:
        """``first`` / ``fallback`` mode: the span model's best span when its probability reaches ``span_min``."""
        if self.span_model is None:
            return None
        texts = span_texts(question, reading.passages[:n_given])
        spans = self.span_model.read(question, texts, top=3)
        best = next((s for s in spans if s.kind == "span" and s.text.strip()), None)
        if best is None or best.score < self.span_min:
            return None
        return self._span_result(best, texts, reading, order, info, best.score)

    def _verdict(
        self, v: Verdict, info: QuestionInfo, reading: Reading, order: np.ndarray, n_given: int, kind: str
    ) -> ReaderResult:
        answer, confidence, sentences, how = v.answer, v.confidence, v.sentences, v.how
        found = confidence >= CHOICE_MIN
        ev = self._evidence([*sentences, *order], reading, max(self.evidence_sentences, len(sentences)))
        added = tuple(reading.passages[n_given:])
        used = {e.n for e in ev}
        return ReaderResult(
            answer if found else "",
            ev,
            confidence,
            found,
            kind,
            info.expected,
            {"compared": how},
            tuple(p for p in added if p.n in used),
        )

    def _evidence(self, order: Any, reading: Reading, n: int) -> tuple[Evidence, ...]:
        out: list[Evidence] = []
        seen: set[str] = set()
        for si in order:
            si = int(si)
            s = reading.sentences[si]
            k = " ".join(s.lower().split())
            if k in seen:
                continue
            seen.add(k)
            out.append(Evidence(s, reading.passages[int(reading.sent_passage[si])].n))
            if len(out) >= n:
                break
        return tuple(out)


class ReaderLLM(ExtractiveLLM):
    """The ``reader`` backend: summaries as ``extractive``, answers by the :class:`Reader`.

    Through the LLM protocol (``complete``) the answer is the reader's text: the short
    answer, then the cited evidence sentences. :meth:`read` gives the structured result.
    """

    name = "reader"
    reader_version = 1

    def __init__(
        self, *, model: Path | str | None = None, threshold: float | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.reader = Reader(self.embedder, model=model, threshold=threshold)

    def bind(self, embedder: Embedder, tokenizer: Any) -> None:
        super().bind(embedder, tokenizer)
        if self.reader.embedder is None:
            self.reader.embedder = embedder

    @property
    def identity(self) -> dict[str, Any]:
        ident = dict(super().identity)
        ident.update(
            backend="reader",
            reader_version=self.reader_version,
            model=self.reader.meta.get("sha256", ""),
            threshold=self.reader.threshold,
        )
        return ident

    def read(self, question: str, passages: Sequence[Passage]) -> ReaderResult:
        return self.reader.read(question, passages)

    def complete(self, request: Request) -> Completion:
        task = request.task
        if task.kind != "answer":
            return super().complete(request)
        if not content_terms(task.question):
            return Completion(NOT_FOUND)
        passages = [Passage(n, "", t, 0.0) for n, t in enumerate(task.texts, start=1)]
        return Completion(self.reader.read(task.question, passages).text)


def title_lookup(view: Any) -> Callable[[str], Passage | None]:
    """Find a passage of an index view by its title (the first chunk of that document)."""

    def build() -> dict[str, int]:
        rows: dict[str, int] = {}
        short: dict[str, list[int]] = {}
        for row, title in enumerate(view.chunks.titles):
            k = key(title)
            if k and k not in rows:
                rows[k] = row
            # "Thomas Stanley, 1st Earl of Derby", "Mary Eaton (actress)": found by the name alone
            head = key(re.split(r"\s*[,(]", title, maxsplit=1)[0])
            if head and head != k:
                short.setdefault(head, []).append(row)
        for head, found in short.items():
            if head not in rows and len({view.chunks.doc_ids[r] for r in found}) == 1:
                rows[head] = found[0]
        return rows

    rows: dict[str, int] = view.cached("reader.titles", build)

    def lookup(name: str) -> Passage | None:
        row = rows.get(key(name))
        if row is None:
            return None
        return Passage(0, view.chunks.titles[row], view.chunks.texts[row], 0.0, row)

    return lookup


def described(
    question: str, info: QuestionInfo, result: ReaderResult, passages: Sequence[Passage] = ()
) -> ReaderResult:
    """A span answer to a question that expects no typed entity (a phrase or a description) as
    the sentence that holds it, where the question asks for a list or a description
    (:data:`_DESCRIBE`: "What are common symptoms of X?" is answered by the sentence that lists
    them, not by one item of the list) or the span comes from a chunk of a long document
    (longer than :data:`SPAN_CHARS`: a phrase lifted from a report or a manual says little
    without its sentence)."""
    if not (result.found and result.kind == "span" and result.evidence):
        return result
    if info.expected not in ("phrase", "description"):
        return result
    first = result.evidence[0]
    long = any(p.n == first.n and len(p.text) > SPAN_CHARS for p in passages)
    if not (long or _DESCRIBE.match(question)) or not _prose(first.sentence):
        return result
    trace = {**result.trace, "span": result.answer}
    return replace(result, answer=first.sentence, evidence=(first,), kind="sentence", trace=trace)


def _prose_sentences(
    question: str, passages: Sequence[Passage], embedder: Embedder | None
) -> tuple[Candidates, list[int]]:
    """Every sentence of the passages scored as the ``extractive`` answer scores them (question
    similarity, IDF-weighted term coverage, passage rank, answer type), and the indices of the
    prose ones (:func:`_prose`), best first."""
    cands = extractive_candidates(question, [p.text for p in passages], embedder)
    if not cands.sentences:
        return cands, []
    order = np.argsort(-_SENTENCE_SCORER.scores(cands), kind="stable")
    return cands, [int(i) for i in order if _prose(cands.sentences[int(i)])]


def _cited(cands: Candidates, i: int, passages: Sequence[Passage]) -> Evidence:
    """Candidate sentence ``i`` as evidence, with the number of its passage."""
    return Evidence(cands.sentences[i], passages[int(cands.passage[i]) - 1].n)


def _prose(sentence: str) -> bool:
    """A sentence a reader can take as an answer: at most :data:`PROSE_CHARS` characters, at least
    half of its tokens words (not the run-together cells of a table extracted from a PDF), not a
    question (a guide's heading "What causes a glioma?" is like the question and answers nothing),
    nor a Markdown heading or table row ("## What survives a crash", "| `src/` | ... |")."""
    if sentence.rstrip().endswith("?") or sentence.lstrip().startswith(("#", "|")):
        return False
    tokens = sentence.split()
    words = sum(t.strip(".,;:()\"'").isalpha() for t in tokens)
    return 0 < len(sentence) <= PROSE_CHARS and words >= len(tokens) / 2


def passages_of(items: Sequence[Any]) -> list[Passage]:
    """Numbered reader passages from context items (``title``, ``text``, ``score``)."""
    return [
        Passage(n, str(it.title or ""), str(it.text), float(it.score), int(getattr(it, "row", -1)))
        for n, it in enumerate(items, start=1)
    ]


SPAN_CHARS = 1600  # about one 384-token window of the span model per passage
# a chunk cut from a long document (a report, a guide: 1,200-token chunks run 4,800-5,600
# characters), not an encyclopaedia article's opening paragraphs (at most 3,000 in HotpotQA and MuSiQue)
LONG_CHUNK_CHARS = 4000


def same_answer(a: str, b: str) -> bool:
    """Two answers name the same thing: their comparison keys (:func:`~.candidates.key`) are
    equal, or one holds the other as whole words ("Lima" and "Lima, Peru")."""
    x, y = key(a), key(b)
    return bool(x) and bool(y) and (x == y or f" {x} " in f" {y} " or f" {y} " in f" {x} ")


def _says_none(span: Any) -> bool:
    """The span's window's class head finds "no answer" the likeliest of its four classes."""
    return bool(span.no_answer > max(span.yes, span.no, 1.0 - span.yes - span.no - span.no_answer))


def span_texts(question: str, passages: Sequence[Passage], budget: int = SPAN_CHARS) -> list[str]:
    """What the span model reads of each passage: the whole text when it fits ``budget``
    characters, else the passage's sentences that share the most content words with the
    question, up to ``budget``, in their order in the passage (a 1,200-token chunk costs one
    or two windows instead of five, and any of its sentences can be chosen, not only the
    first ones)."""
    terms = content_terms(question)
    out = []
    for p in passages:
        if len(p.text) <= budget:
            out.append(p.text)
            continue
        sents = reading_sentences(p.text)
        ranked = sorted(range(len(sents)), key=lambda k: (-len(content_terms(sents[k]) & terms), k))
        chosen: list[int] = []
        used = 0
        for k in ranked:
            if chosen and used + len(sents[k]) > budget:
                break
            chosen.append(k)
            used += len(sents[k]) + 1
        out.append("\n".join(sents[k] for k in sorted(chosen)))
    return out


__all__ = [
    "NOT_FOUND",
    "Evidence",
    "Reader",
    "ReaderLLM",
    "ReaderResult",
    "passages_of",
    "same_answer",
    "shipped_span_model",
    "span_texts",
    "title_lookup",
]
