"""Dev figures of the neural span reader: answer EM/F1 given the gold or all of a question's passages.

The dev sets are ``hotpotqa_dev200``, ``musique_dev200``, ``2wikimultihopqa_dev164`` and
``popqa[:400]``; none of their questions or passages is ever trained on
(:mod:`paretorag.training.neural_data`). Two settings, no retrieval: ``gold`` reads only the
question's supporting passages, ``distractor`` reads every passage shipped with the question
(HotpotQA 10, MuSiQue 20, 2Wiki 10; PopQA ships only its 2 gold passages, so both settings
are the same there). The answer is the model's best candidate across all windows of all
passages, ``yes``/``no`` when that head wins (:meth:`paretorag.answering.reader.neural.SpanModel.read`).
Scores are SQuAD-normalized EM and token F1 (:mod:`paretorag.eval.metrics`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..answering.reader.neural import SpanModel
from ..eval import metrics as M
from ..eval.loaders import load_dataset
from .neural_data import passage_text

# a question that can be answered yes or no starts with an auxiliary verb
YES_NO_FORM = re.compile(
    r"^\s*(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should|shall|may|might)\b", re.I
)

DEV_SETS: tuple[tuple[str, int | None], ...] = (
    ("hotpotqa_dev200", None),
    ("musique_dev200", None),
    ("2wikimultihopqa_dev164", None),
    ("popqa", 400),
)


def evaluate(
    folder: Path | str,
    data_dir: Path | str,
    *,
    variant: str = "fp32",
    threads: int = 1,
    limit: int | None = None,
    sets: tuple[tuple[str, int | None], ...] = DEV_SETS,
    settings: tuple[str, ...] = ("gold", "distractor"),
    gate_yes_no: bool = False,
    pack: bool | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """``{set: {"gold": {...}, "distractor": {...}}}`` with ``em``, ``f1`` (percent), ``n`` and the
    share of yes/no answers, plus the seconds the reading took. With ``gate_yes_no``, yes and no
    are allowed only for a question that starts with an auxiliary verb (:data:`YES_NO_FORM`);
    any other question takes its best span among the top 5 candidates. ``pack`` reads the
    passages packed or not (None: the model folder's setting, :class:`SpanModel`), in the order
    the dataset lists them."""
    say = progress or (lambda line: None)
    model = SpanModel(folder, variant=variant, threads=threads, pack=pack)
    out: dict[str, Any] = {}
    for subset, stop in sets:
        ds = load_dataset(data_dir, subset)
        texts = {p.key: passage_text(p.title, p.text) for p in ds.passages}
        questions = ds.questions[:stop]
        if limit is not None:
            questions = questions[:limit]
        res: dict[str, Any] = {}
        for setting in settings:
            t0 = time.time()
            em: list[float] = []
            f1: list[float] = []
            yn = 0
            for q in questions:
                keys = q.gold_keys if setting == "gold" else q.context_keys
                spans = model.read(q.text, [texts[k] for k in keys], top=5 if gate_yes_no else 1)
                if gate_yes_no and not YES_NO_FORM.match(q.text):
                    spans = [s for s in spans if s.kind == "span"]
                pred = spans[0].text if spans else ""
                yn += bool(spans) and spans[0].kind != "span"
                em.append(M.exact_match(pred, q.answers))
                f1.append(M.token_f1(pred, q.answers))
            n = len(questions)
            res[setting] = {
                "em": round(100 * sum(em) / max(1, n), 1),
                "f1": round(100 * sum(f1) / max(1, n), 1),
                "n": n,
                "yes_no_answers": yn,
                "seconds": round(time.time() - t0, 1),
            }
            res[setting]["packed"] = model.pack
            say(f"{subset} {setting} {variant}: EM {res[setting]['em']} F1 {res[setting]['f1']} (n={n})")
        out[subset if stop is None else f"{subset}[:{stop}]"] = res
    return out


__all__ = ["DEV_SETS", "evaluate"]


def main(argv: list[str] | None = None) -> None:
    """``python -m paretorag.training.neural_eval MODEL --data DIR``: the figures above as JSON."""
    import argparse
    import json

    ap = argparse.ArgumentParser(
        description="Dev EM/F1 of a neural span model on gold and distractor passages."
    )
    ap.add_argument("model", help="folder written by `paretorag train-reader --neural`")
    ap.add_argument("--data", required=True, help="benchmark folder (shared/data)")
    ap.add_argument("--variant", choices=("fp32", "int8"), default="int8")
    ap.add_argument("--limit", type=int, default=None, help="at most this many questions per set")
    ap.add_argument(
        "--pack",
        choices=("model", "on", "off"),
        default="model",
        help="read passages packed (several in one window) or one by one; model: the folder's setting",
    )
    ap.add_argument("--gate", action="store_true", help="allow yes/no only for a question in yes/no form")
    args = ap.parse_args(argv)
    pack = {"model": None, "on": True, "off": False}[args.pack]
    print(
        json.dumps(
            evaluate(
                args.model,
                args.data,
                variant=args.variant,
                threads=2,
                limit=args.limit,
                gate_yes_no=args.gate,
                pack=pack,
            ),
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
