"""Retrievals of the E2GraphRAG and G2ConS methods on slices of ../shared/data, as JSON.

The framework regression test (``test_framework_regression.py``) rebuilds these
indexes and compares every retrieval with the recorded file
``tests/data/framework_regression.json`` (:func:`retrieval_difference`): same mode,
branch and evidence text, same chunk ids and context items in the same order up to
ties. Each recorded id carries the question's cosine to it (``row_sims``, ``sims``), so
that ids whose cosines tie within :data:`TOL` may come in either order on another CPU,
and each retrieval the ranges of positions that ties upstream of the chunks reorder
(``row_moves``, ``item_moves``). Re-record only when a change of results is intended
(about two minutes)::

    python tests/regression_retrievals.py --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
FIXTURE = ROOT / "tests" / "data" / "framework_regression.json"

# How far apart two cosines may be and still tie. Floats differ between CPUs: a dot
# product of unit float32 vectors summed in another order (another SIMD width or BLAS
# kernel) moves by about sqrt(d) * 2**-24 = 7e-7 for the d = 128 vectors here (at most
# 2 * d * 2**-24 = 1.5e-5), so cosines closer than that may come in either order. In the
# recording, tied cosines are within 1e-7 of each other (exact ties up to the rounding of
# the float32 vectors: passages whose hashed words weigh the same) and the closest
# untied neighbours 1.46e-5 apart: 1e-5 lets the ties move and keeps every other order.
TOL = 1e-5

# Ties upstream of a chunk's own cosine (two concepts' cosines in G2ConS, equal rank sums
# of its two paths) move chunks whose cosines differ. The recorder finds them by running
# each retrieval again with the question vector's components moved by up to MOVE_NOISE
# (relative), which moves its cosines by ~1e-6 as another CPU does, and records the ranges
# of positions that came in another order ("row_moves", "item_moves"). An exact tie is
# seen broken one way only in all MOVE_RUNS runs with probability 2**-23.
MOVE_NOISE = 1e-5
MOVE_RUNS = 24

METHODS: list[tuple[str, dict[str, Any]]] = [
    ("e2graphrag", {}),
    ("e2graphrag", {"dense_only": True}),
    ("e2graphrag", {"graph_filter": False}),
    ("e2graphrag", {"entity_aware": False}),
    ("e2graphrag", {"dense": False}),
    ("e2graphrag", {"occurrence": False}),
    ("e2graphrag", {"dense": False, "occurrence": False}),
    ("g2cons-concept", {}),
    ("g2cons-concept", {"rerank": "naive"}),
    ("g2cons-concept", {"cooccurrence": "sentence"}),
    ("g2cons-concept", {"similarity_filter": False}),
    ("g2cons", {}),
]


def _corpora(tmp: Path) -> list[tuple[str, list[Any], list[str], dict[str, Any]]]:
    """(name, sources, questions, RAG.open settings) of each slice."""
    from paretorag.ingest.files import make_document

    corpus = json.loads((DATA / "2wikimultihopqa" / "2wikimultihopqa_dev164_corpus.json").read_text())
    docs = [make_document(r["title"], r["text"], "2wiki", presplit=True) for r in corpus[:300]]
    qs = json.loads((DATA / "2wikimultihopqa" / "2wikimultihopqa_dev164.json").read_text())
    questions = [q["question"] for q in qs[:30]]
    record = json.loads((DATA / "quality" / "quality.jsonl").read_text().splitlines()[0])
    story = tmp / "story.txt"
    story.write_text(record["input"], encoding="utf-8")
    return [
        ("2wiki300", docs, questions, {}),
        ("quality1", [story], list(record["instructions"]), {"chunk_size": 300, "chunk_overlap": 30}),
    ]


class _Cosines:
    """The question's cosine to retrieved chunk rows and context items of one index,
    in float64 from the stored float32 vectors."""

    def __init__(self, view: Any) -> None:
        from paretorag.retrieval.operators.e2graphrag import load_state

        chunks = view.chunks
        self.view = view
        self.rows = {
            (d, int(o)): i for i, (d, o) in enumerate(zip(chunks.doc_ids, chunks.orders, strict=True))
        }
        self.summaries = np.asarray(load_state(view).tree.summary_vectors, dtype=np.float64)

    def of_rows(self, q: np.ndarray, rows: Sequence[int]) -> list[float]:
        if not len(rows):
            return []
        vectors = np.asarray(self.view.chunk_vectors(np.asarray(rows, dtype=np.int64)), dtype=np.float64)
        return [round(float(s), 7) for s in vectors @ q]

    def of_item(self, q: np.ndarray, chunk_id: str) -> float:
        """A chunk ``doc#n``, a merged run ``doc#a-b`` (its best chunk, which ranks it) or
        a summary ``doc#sN`` (E2GraphRAG's evidence items)."""
        doc, part = chunk_id.rsplit("#", 1)
        if part.startswith("s"):
            return round(float(self.summaries[int(part[1:])] @ q), 7)
        first, _, last = part.partition("-")
        orders = range(int(first), int(last or first) + 1)
        return max(self.of_rows(q, [self.rows[doc, o] for o in orders]))


def record(tmp: Path, move_runs: int = 0) -> dict[str, Any]:
    """Every retrieval of :data:`METHODS` on both slices; with ``move_runs``, also the
    positions that ties upstream of the chunks' cosines move (:func:`_moves`)."""
    from paretorag import RAG

    out: dict[str, Any] = {}
    names = sorted({m for m, _ in METHODS})
    for name, sources, questions, settings in _corpora(tmp):
        # the fixture predates titled chunk vectors, the entity graph's max_df="auto" and
        # nouns_max_df="auto" and pooled sentence vectors: record and compare with text-only
        # vectors, the paper's entity graph and sentences embedded on their own
        rag = RAG.open(
            tmp / name,
            methods=names,
            embedder="hash:128",
            workers=1,
            embed_titles=False,
            builders={
                "entity_graph": {"max_df": 1.0, "nouns_max_df": 1.0},
                "concept_graph": {"sentence_vectors": "separate"},
            },
            **settings,
        )
        rag.index(sources)
        cosines = _Cosines(rag.view)
        rows: list[dict[str, Any]] = []
        for method, params in METHODS:
            for q in questions:
                r, items = rag.retrieve(q, method, budget=4000, **params)
                qv = np.asarray(rag.view.embed_query(q), dtype=np.float64)
                ids = r.scored.ids.tolist()
                row = {
                    "method": method,
                    "params": params,
                    "question": q,
                    "rows": ids,
                    "row_sims": cosines.of_rows(qv, ids),
                    "items": [it.chunk_id for it in items],
                    "sims": [cosines.of_item(qv, it.chunk_id) for it in items],
                    "mode": r.mode,
                    "branch": r.branch,
                    "context_sha": hashlib.sha256((r.context_text or "").encode()).hexdigest()[:16],
                }
                row["row_moves"], row["item_moves"] = _moves(rag, q, method, params, row, move_runs)
                rows.append(row)
        out[name] = rows
        rag.close()
    return out


def _moves(
    rag: Any, question: str, method: str, params: dict[str, Any], base: dict[str, Any], runs: int
) -> tuple[list[list[int]], list[list[int]]]:
    """Ranges of positions of the rows and of the items that come in another order when
    the question vector moves by :data:`MOVE_NOISE` (``runs`` times, seeded)."""
    view = rag.view
    original = view.embed_query
    vector = np.asarray(original(question), dtype=np.float32)
    rows: list[tuple[int, int]] = []
    items: list[tuple[int, int]] = []
    for seed in range(runs):
        noise = np.random.default_rng(seed).uniform(-MOVE_NOISE, MOVE_NOISE, vector.size)
        moved = (vector * (1.0 + noise)).astype(np.float32)
        # the view's method, shadowed for this question only
        view.embed_query = lambda text, moved=moved: moved if text == question else original(text)
        try:
            r, got = rag.retrieve(question, method, budget=4000, **params)
        finally:
            del view.embed_query
        rows += permuted_ranges(base["rows"], r.scored.ids.tolist())
        items += permuted_ranges(base["items"], [it.chunk_id for it in got])
    return [list(g) for g in merge_ranges(rows)], [list(g) for g in merge_ranges(items)]


# -- comparing with the recording, up to near-ties ------------------------------------------
def tie_groups(sims: Sequence[float], tol: float = TOL) -> list[tuple[int, int]]:
    """Runs ``[a, b)`` of consecutive positions whose neighbours' cosines differ by at most ``tol``.

    A ranking by cosine puts tied items side by side, and so do the orders built on one
    (a concept's chunks, an occurrence weight's nodes, the fill-up from the dense ranking):
    through the ids' own cosines, only such a run can come in another order on another
    CPU (ties upstream of them are the recorded moves).
    """
    groups: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(sims) + 1):
        if i == len(sims) or abs(sims[i] - sims[i - 1]) > tol:
            groups.append((start, i))
            start = i
    return groups if sims else []


def permuted_ranges(base: Sequence[Any], other: Sequence[Any]) -> list[tuple[int, int]]:
    """The smallest ranges ``[a, b)`` outside which ``other`` equals ``base`` position by
    position and inside which it holds the same ids in another order (where it holds
    other ids, the range runs to the end of ``base``)."""
    out: list[tuple[int, int]] = []
    n = min(len(base), len(other))
    i = 0
    while i < n:
        if base[i] == other[i]:
            i += 1
            continue
        start = i
        pending: Counter[Any] = Counter()
        while i < n:
            pending[base[i]] += 1
            pending[other[i]] -= 1
            i += 1
            if not any(pending.values()):
                break
        else:
            i = len(base)
        out.append((start, i))
    return out


def merge_ranges(ranges: Iterable[Sequence[int]]) -> list[tuple[int, int]]:
    """Overlapping ranges ``[a, b)`` joined (ranges that only touch stay apart)."""
    out: list[tuple[int, int]] = []
    for a, b in sorted((int(a), int(b)) for a, b in ranges):
        if out and a < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def ranking_difference(
    want: Sequence[Any],
    want_sims: Sequence[float],
    got: Sequence[Any],
    got_sims: Sequence[float],
    tol: float = TOL,
    moves: Iterable[Sequence[int]] = (),
) -> str | None:
    """What differs between a recorded ranking and a new one, or None when they agree.

    They agree when every group of the recording holds the same ids at the same
    positions, in any order among themselves, and every id's cosine is the recorded one
    within ``tol``. The groups are the runs of tied cosines (:func:`tie_groups`), joined
    where a recorded move (a range of positions that ties upstream reorder) overlaps
    them. In the last group, an id may also be replaced by one whose cosine ties the
    replaced one's recorded cosine: a top-k cut through a tie.
    """
    if len(got) != len(want) or len(got_sims) != len(got):
        return f"{len(got)} ids where {len(want)} were recorded: {list(got)} vs {list(want)}"
    groups = merge_ranges([*tie_groups(want_sims, tol), *moves])
    for a, b in groups:
        if sorted(map(str, got[a:b])) == sorted(map(str, want[a:b])):
            continue
        if b == len(want) and _tied_swap(want[a:b], want_sims[a:b], got[a:b], got_sims[a:b], tol):
            continue
        where = f"position {a}" if b == a + 1 else f"positions {a}-{b - 1}"
        return (
            f"{where}: {list(got[a:b])} where {list(want[a:b])} was recorded (cosines {list(want_sims[a:b])})"
        )
    recorded = dict(zip(want, want_sims, strict=True))
    for key, sim in zip(got, got_sims, strict=True):
        if key in recorded and abs(sim - recorded[key]) > tol:
            return f"{key}: cosine {sim} where {recorded[key]} was recorded"
    return None


def _tied_swap(
    want: Sequence[Any], want_sims: Sequence[float], got: Sequence[Any], got_sims: Sequence[float], tol: float
) -> bool:
    """Whether the ids that left the recorded group and those that came in pair up, in
    order of cosine, each newcomer tying the recorded cosine of the one it replaced."""
    gone = sorted(want_sims[i] for i, key in enumerate(want) if key not in got)
    new = sorted(got_sims[i] for i, key in enumerate(got) if key not in want)
    return len(gone) == len(new) and all(abs(n - g) <= tol for g, n in zip(gone, new, strict=True))


def retrieval_difference(want: dict[str, Any], got: dict[str, Any], tol: float = TOL) -> str | None:
    """What differs between a recorded retrieval (a row of the fixture) and a new one.

    Method, settings, question, mode and branch must be equal; the chunk rows and the
    context items equal up to ties (:func:`ranking_difference`, with the recorded
    moves); the evidence text
    (its hash) equal whenever the same items are kept. Only a tie at the cut of the
    items changes which items are kept, and then the evidence text with them.
    """
    for key in ("method", "params", "question", "mode", "branch"):
        if got[key] != want[key]:
            return f"{key} {got[key]!r} where {want[key]!r} was recorded"
    for ids, sims, moves in (("rows", "row_sims", "row_moves"), ("items", "sims", "item_moves")):
        diff = ranking_difference(want[ids], want[sims], got[ids], got[sims], tol, want[moves])
        if diff is not None:
            return f"{ids}: {diff}"
    if sorted(got["items"]) == sorted(want["items"]) and got["context_sha"] != want["context_sha"]:
        return f"evidence text {got['context_sha']} where {want['context_sha']} was recorded"
    return None


def write_fixture(result: dict[str, Any], path: Path = FIXTURE) -> None:
    """One recorded retrieval per line, so that a change shows which retrieval it is."""
    lines = []
    for name in sorted(result):
        rows = ",\n".join(
            json.dumps(r, sort_keys=True, ensure_ascii=False, separators=(",", ":")) for r in result[name]
        )
        lines.append(f"{json.dumps(name)}: [\n{rows}\n]")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        result = record(Path(d), move_runs=MOVE_RUNS if "--write" in sys.argv else 0)
    if "--write" in sys.argv:
        write_fixture(result)
    print(json.dumps({k: len(v) for k, v in result.items()}))
