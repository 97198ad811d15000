"""The offline reader: question analysis, comparisons, yes/no, spans and abstention (real spaCy, real model)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from paretorag.answering.reader import FEATURES, Passage, Reader
from paretorag.answering.reader.candidates import features, gather, key, read_passages
from paretorag.answering.reader.compare import life_dates, parse_date, passage_of
from paretorag.answering.reader.question import analyze, known_entities, split_options, wh_type
from paretorag.answering.reader.ranker import load, shipped_dir
from paretorag.errors import ConfigError
from paretorag.eval.runner import guess

pytestmark = pytest.mark.slow  # loads spaCy


# -- question analysis ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("question", "wh", "expected"),
    [
        ("When was Jarosław, Duke Of Opole's father born?", "when", "date"),
        ("Where did Khanzada Begum's father die?", "where", "place"),
        ("Who is the spouse of the director of film Up, Down, Fragile?", "who", "person"),
        ("How many members were in the group?", "how many", "number"),
        ("What is the place of birth of the director of film Oh Billy, Behave?", "what", "place"),
        ("Are Paul Curtin and Robert Mcfarlane of the same nationality?", "yesno", "yesno"),
        ("Which film came out first, Oloibiri (Film) or The Eagle'S Claw?", "which", "choice"),
        ("Why did the index survive the crash?", "why", "phrase"),
    ],
)
def test_question_types(question: str, wh: str, expected: str) -> None:
    info = analyze(question)
    assert wh_type(question) == wh
    assert info.expected == expected


def test_options_keep_commas_inside_titles() -> None:
    q = "Which film has the director born earlier, The Adventures Of Priscilla, Queen Of The Desert or Harvest: 3,000 Years?"
    assert split_options(q) == ("Adventures Of Priscilla, Queen Of The Desert", "Harvest: 3,000 Years")
    assert split_options("Was Jovita Carranza or Fidel Kuri Grajales born first?") == (
        "Jovita Carranza",
        "Fidel Kuri Grajales",
    )
    assert split_options("Who directed Up?") == ()
    # an event of each option, and "Between A and B, which ..."
    assert split_options(
        "Which came first the forming of The Dandy Warhols or the birth of Robert Young?"
    ) == (
        "Dandy Warhols",
        "Robert Young",
    )
    assert split_options(
        "Between Iain Banks and Irwin Shaw, which writer has had a more diverse career?"
    ) == (
        "Iain Banks",
        "Irwin Shaw",
    )


def test_relation_terms_exclude_the_named_entity() -> None:
    info = analyze("Where did James Stanley's father die?", ("James Stanley",))
    assert "father" in info.relation_terms and "die" in info.relation_terms
    assert "jame" not in info.relation_terms and "stanley" not in info.relation_terms


def test_guess_baseline() -> None:
    assert guess("Which film came out first, Alpha or Beta?") == "Alpha"
    assert guess("Are Alpha and Beta both American?") == "yes"
    assert guess("Who directed Alpha?") == ""


# -- attributes and comparisons ------------------------------------------------------------------
PASSAGES = [
    Passage(1, "Alpha (film)", "Alpha is a 1951 American drama film directed by Carl Boese.", 0.9),
    Passage(2, "Beta", "Beta is a 1937 French comedy film directed by Curtis Bernhardt.", 0.8),
    Passage(
        3,
        "Carl Boese",
        "Carl Boese (26 August 1887 – 6 July 1958) was a German film director. He died in Berlin.",
        0.7,
    ),
    Passage(
        4,
        "Curtis Bernhardt",
        "Curtis Bernhardt (15 April 1899 – 22 February 1981) was a German-born American film director.",
        0.6,
    ),
]


def test_dates_and_life_dates() -> None:
    assert parse_date("15 April 1899") == (1899, 4, 15)
    assert parse_date("April 19, 1976") == (1976, 4, 19)
    assert parse_date("no date") is None
    info = analyze("When was Carl Boese born?")
    reading = read_passages(info, PASSAGES, None)
    born, died, _ = life_dates(passage_of("Carl Boese", reading), reading)
    assert born == (1887, 8, 26) and died == (1958, 7, 6)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Which film came out first, Alpha (Film) or Beta?", "Beta"),
        ("Which film was released more recently, Alpha (Film) or Beta?", "Alpha (Film)"),
        ("Which film has the director who died later, Alpha (Film) or Beta?", "Beta"),
        ("Which film has the director born earlier, Alpha (Film) or Beta?", "Alpha (Film)"),
    ],
)
def test_choice_reads_each_option_and_its_bridge(question: str, answer: str) -> None:
    result = Reader().read(question, PASSAGES)
    assert result.kind == "choice" and result.found
    assert result.answer == answer
    assert result.confidence >= 0.8
    assert len({e.n for e in result.evidence}) >= 2  # both options' passages are cited


def test_bridge_fetches_a_missing_passage_by_title() -> None:
    lookup = {key(p.title): p for p in PASSAGES[2:]}
    result = Reader().read(
        "Which film has the director who died later, Alpha (Film) or Beta?",
        PASSAGES[:2],
        lambda name: lookup.get(key(name)),
    )
    assert result.answer == "Beta"
    assert {p.title for p in result.added} == {"Carl Boese", "Curtis Bernhardt"}
    assert {p.n for p in result.added} == {3, 4}


def test_yes_no_same_nationality() -> None:
    people = [
        Passage(1, "Ann Lee", "Ann Lee (born 1950) is an American painter.", 0.9),
        Passage(2, "Bo Kim", "Bo Kim (born 1961) is a South Korean painter.", 0.8),
        Passage(3, "Cy Dunn", "Cy Dunn (born 1930) was an American sculptor.", 0.7),
    ]
    reader = Reader()
    no = reader.read("Are Ann Lee and Bo Kim of the same nationality?", people)
    yes = reader.read("Are Ann Lee and Cy Dunn of the same nationality?", people)
    assert (no.kind, no.answer) == ("yesno", "no")
    assert (yes.kind, yes.answer) == ("yesno", "yes")


# -- spans, the ranker and abstention ------------------------------------------------------------
def test_shipped_model_matches_this_version() -> None:
    meta = json.loads((shipped_dir() / "reader.json").read_text())
    assert meta["features"] == list(FEATURES)
    assert set(meta["train_sets"]) == {"musique_train", "hotpotqa_train", "2wikimultihopqa", "popqa"}
    ranker = load()
    assert 0.0 < ranker.threshold < 1.0


def test_candidates_and_features() -> None:
    info = analyze("Where did Carl Boese die?", ("Carl Boese",))
    reading = read_passages(info, PASSAGES, None)
    cands = gather(reading)
    texts = {c.text for c in cands}
    assert {"Berlin", "Carl Boese", "German film director", "film director"} <= texts
    x = features(info, reading, cands)
    assert x.shape == (len(cands), len(FEATURES))
    berlin = next(i for i, c in enumerate(cands) if c.text == "Berlin")
    col = FEATURES.index("type_match")
    assert x[berlin, col] == 1.0  # a place for "where"
    assert x[berlin, FEATURES.index("relation")] > 0  # "died" matches "die"


def test_one_hop_attribute_and_relation() -> None:
    reader = Reader()
    died = reader.read("Where did Carl Boese die?", PASSAGES)
    assert (died.kind, died.answer, died.found) == ("chain", "Berlin", True)
    assert died.evidence[0].n == 3 and "Berlin" in died.evidence[0].sentence
    assert died.text.startswith("Berlin [3]")
    born = reader.read("When was Curtis Bernhardt born?", PASSAGES)
    assert born.answer == "15 April 1899"
    directed = reader.read("Who directed Beta?", PASSAGES)
    assert directed.answer == "Curtis Bernhardt"


def test_compositional_chain() -> None:
    result = Reader().read("Where did the director of film Alpha (Film) die?", PASSAGES)
    assert (result.kind, result.answer) == ("chain", "Berlin")
    assert [e.n for e in result.evidence[:2]] == [1, 3]  # the film's passage, then the director's


FAMILY = [
    Passage(
        1,
        "Anna of Rhein",
        "Anna of Rhein (1450 - 1501) was a German noblewoman. She was the daughter of "
        "Albert III, Duke of Bavaria and Margaret of Lorraine.",
        0.9,
    ),
    Passage(
        2,
        "Albert III, Duke of Bavaria",
        "Albert III, Duke of Bavaria (1401 - 1460) was a duke. He was the son "
        "of Ernest, Duke of Bavaria and Elisabetta Visconti.",
        0.8,
    ),
    Passage(
        3,
        "Ernest, Duke of Bavaria",
        "Ernest, Duke of Bavaria (1373 - 1438) was a duke of Bavaria-Munich.",
        0.7,
    ),
    Passage(
        4,
        "Margaret of Lorraine",
        "Margaret of Lorraine (1420 - 1490) was the daughter of Princess Isabella "
        "of Lorraine and Charles II, Duke of Lorraine.",
        0.6,
    ),
    Passage(
        5,
        "Louis of Nassau",
        "Louis of Nassau was the son of Margaretha van Mechelen and Maurice, Prince of Orange.",
        0.5,
    ),
    Passage(
        6,
        "Maurice, Prince of Orange",
        "Maurice, Prince of Orange was a stadtholder. He studied in Leiden, and his army took Breda.",
        0.4,
    ),
]


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        # two hops of the same relation: the second "father" is read on the father's own page
        ("Who is the paternal grandfather of Anna Of Rhein?", "Ernest, Duke of Bavaria"),
        ("Who is Anna Of Rhein's father?", "Albert III, Duke of Bavaria"),  # the name with its title
        ("Who is Anna Of Rhein's mother?", "Margaret of Lorraine"),  # after the "and"
        # the mother named first ("daughter of Princess Isabella ... and Charles II")
        ("Who is the maternal grandfather of Anna Of Rhein?", "Charles II, Duke of Lorraine"),
        # no title says who is who, the father's page does ("He studied ...")
        ("Who is the father of Louis Of Nassau?", "Maurice, Prince of Orange"),
        ("Who is the mother of Louis Of Nassau?", "Margaretha van Mechelen"),
    ],
)
def test_chains_of_family_relations(question: str, answer: str) -> None:
    result = Reader().read(question, FAMILY)
    assert (result.kind, result.answer) == ("chain", answer)


def test_full_names_and_their_pages() -> None:
    from paretorag.answering.reader.chain import canonical, full_name

    s = "He was the son of Karl August, Prince of Waldeck and Pyrmont, and Anna of Brunswick."
    assert full_name(s, s.index("Karl"), s.index("Karl") + len("Karl August")) == (
        "Karl August, Prince of Waldeck and Pyrmont"
    )
    s = "She was the daughter of Albert III, Duke of Bavaria and Anna of Brunswick."
    assert full_name(s, s.index("Albert"), s.index("Albert") + 10) == "Albert III, Duke of Bavaria"
    s = "He was the son of Bernhard II, Prince of Anhalt- Bernburg. He ruled."
    assert (
        full_name(s, s.index("Bernhard"), s.index("Bernhard") + 11)
        == "Bernhard II, Prince of Anhalt-Bernburg"
    )
    reading = read_passages(analyze("Who is X?"), FAMILY, None)
    assert canonical("Archduke Ernest, Duke of Bavaria", reading) == "Ernest, Duke of Bavaria"
    tsarina = [Passage(1, "Maria Feodorovna (Dagmar)", "Maria Feodorovna was Empress of Russia.", 0.9)]
    assert (
        canonical("Maria Feodorovna of Russia", read_passages(analyze("Who?"), tsarina, None))
        == "Maria Feodorovna"
    )
    assert canonical("Ernest", reading) == "Ernest"  # one word names many pages: kept as read


def test_chain_anchors_keep_their_first_words() -> None:
    from paretorag.answering.reader.chain import parse

    assert parse("What nationality is the performer of song When The Stars Go Blue?") == (
        "When The Stars Go Blue",
        ("performer",),
        "nationality",
    )
    assert parse("Where was the place of death of the director of film The Song Of The Old Days?") == (
        "The Song Of The Old Days",
        ("director",),
        "death_place",
    )
    # a relation word inside a title-cased name is no relation
    assert parse("What is the date of death of Papianilla (Wife Of Sidonius Apollinaris)'s husband?") == (
        "Papianilla (Wife Of Sidonius Apollinaris)",
        ("husband",),
        "death_date",
    )


def test_chain_reads_the_birth_half_of_a_hyphenated_life_span() -> None:
    passages = [
        Passage(
            1, "The Circus Cyclone", "The Circus Cyclone is a 1925 film directed by Albert S. Rogell.", 0.9
        ),
        Passage(
            2,
            "Albert S. Rogell",
            "Albert S. Rogell( August 21, 1901 Oklahoma City, Oklahoma- April 7, 1988 "
            "Los Angeles, California) was an American film director.",
            0.8,
        ),
    ]
    result = Reader().read("Where was the director of film The Circus Cyclone born?", passages)
    assert (result.kind, result.answer) == ("chain", "Oklahoma City")


def test_same_country_reads_the_country_not_the_first_place() -> None:
    passages = [
        Passage(1, "Vasilyevsky Island", "Vasilyevsky Island is an island in Saint Petersburg, Russia.", 0.9),
        Passage(
            2, "Preobrazheniya Island", "Preobrazheniya Island is an island in the Laptev Sea, Russia.", 0.8
        ),
        Passage(3, "Moredun Creek", "Moredun Creek is a creek in New South Wales, Australia.", 0.7),
    ]
    same = Reader().read(
        "Are Vasilyevsky Island and Preobrazheniya Island located in the same country?", passages
    )
    assert (same.kind, same.answer) == ("yesno", "yes")
    other = Reader().read("Are Vasilyevsky Island and Moredun Creek located in the same country?", passages)
    assert (other.kind, other.answer) == ("yesno", "no")


def test_bridge_comparison_follows_a_director_spacy_does_not_tag() -> None:
    from paretorag.answering.reader.compare import name_by

    s = "El Tonto is an upcoming comedy film written and directed by Charlie Day."
    assert name_by(s, s.lower().find("direct")) == "Charlie Day"
    assert name_by("It was directed in 1990.", 7) is None
    passages = [
        Passage(1, "El Tonto", s, 0.9),
        Passage(2, "Charlie Day", "Charlie Day (born February 9, 1976) is an American actor.", 0.8),
        Passage(3, "Heart of Doreon", "The Heart of Doreon is a film directed by Robert Bradbury.", 0.7),
        Passage(
            4, "Robert Bradbury", "Robert Bradbury (March 23, 1886 - November 24, 1949) was a director.", 0.6
        ),
    ]
    result = Reader().read("Which film whose director was born first, El Tonto or Heart Of Doreon?", passages)
    assert (result.kind, result.answer) == ("choice", "Heart Of Doreon")


def test_a_sentence_answer_from_long_chunks_is_the_best_of_all_their_sentences(minilm) -> None:
    filler = " ".join(
        f"The clinic on floor {i} keeps its records in the blue archive room." for i in range(30)
    )
    chunk = (
        filler + " Basal cell carcinoma is the most common type of skin cancer, and it grows slowly. "
        "It rarely spreads to other parts of the body."
    )
    assert len(chunk) > 1600  # a chunk of a long document
    reader = Reader(minilm)
    result = reader.read(
        "Why is basal cell carcinoma the most common type of skin cancer?", [Passage(1, "Skin", chunk, 1.0)]
    )
    # the why / how stage reads the first sentences of a chunk only; the answer is further in
    assert result.kind == "sentence" and result.found
    assert result.answer.startswith("Basal cell carcinoma is the most common type")
    assert result.evidence[0].n == 1
    short = reader.read("Why is basal cell carcinoma common?", [Passage(1, "Skin", chunk[-200:], 1.0)])
    assert "sentence_of_stage" not in short.trace  # short passages: the stage's own sentence


def test_a_writing_request_is_answered_by_several_sentences_in_their_order(minilm) -> None:
    guide = [
        Passage(
            1,
            "Skin",
            "Basal cell carcinoma grows slowly. Surgery removes most basal cell carcinomas. "
            "Follow-up includes a full skin exam once a year. The clinic opens at nine.",
            1.0,
        ),
        Passage(
            2,
            "Risk",
            "Fair skin and sun exposure raise the risk of basal cell carcinoma. "
            "Immune suppression after an organ transplant raises it too. What causes basal cell carcinoma?",
            0.5,
        ),
    ]
    reader = Reader(minilm)
    result = reader.read(
        "Imagine you are a dermatologist. Write a short note on the risks, treatment and follow-up "
        "of basal cell carcinoma for a patient.",
        guide,
    )
    assert result.kind == "sentence" and result.found and result.trace["composed"] >= 3
    assert 3 <= len(result.evidence) <= 5  # several sentences, not one span
    said = [e.sentence for e in result.evidence]
    assert "What causes basal cell carcinoma?" not in said  # a heading phrased as a question answers nothing
    # in the passages' order: passage 1's sentences before passage 2's
    assert [e.n for e in result.evidence] == sorted(e.n for e in result.evidence)
    assert result.answer == " ".join(said)
    # a question is no writing request: one short answer as before
    assert "composed" not in reader.read("What does surgery remove?", guide).trace


def test_a_yes_no_question_over_long_chunks_is_answered_by_its_sentence(minilm) -> None:
    filler = " ".join(
        f"The clinic on floor {i} keeps its records in the blue archive room." for i in range(60)
    )
    chunk = filler + " Imaging such as a CT scan may be used in the diagnosis of basal cell carcinoma."
    assert len(chunk) > 4000  # a chunk of a long document, not an encyclopaedia article
    reader = Reader(minilm)
    question = "Is imaging sometimes used in the diagnosis of basal cell carcinoma?"
    result = reader.read(question, [Passage(1, "Skin", chunk, 1.0)])
    assert result.kind == "sentence" and result.found
    assert result.answer.startswith("Imaging such as a CT scan")
    assert "yesno_of_stage" in result.trace
    short = reader.read(question, [Passage(1, "Skin", chunk[-90:], 1.0)])
    assert short.kind == "yesno"  # short passages keep the yes/no answer


def test_a_markdown_heading_like_the_question_never_answers_it(minilm) -> None:
    filler = " ".join(
        f"The clinic on floor {i} keeps its records in the blue archive room." for i in range(30)
    )
    chunk = (
        "## The index on disk, and what survives a crash\n\n" + filler + " A killed index run leaves "
        "the last committed index loadable: every write goes to a new file, renamed over the old one."
    )
    result = Reader(minilm).read(
        "Why does the index survive a crash?", [Passage(1, "operations", chunk, 1.0)]
    )
    assert result.found and not result.answer.lstrip().startswith("#")
    assert result.answer.startswith("A killed index run leaves")


def test_lettered_options_are_read_from_lines_or_inline() -> None:
    from paretorag.answering.reader.options import lettered_options

    assert lettered_options("Who cooks?\n(A) Leo\n(B) the captain\n(C) Phobos") == (
        "Who cooks?",
        ("Leo", "the captain", "Phobos"),
    )
    assert lettered_options("Who cooks? (A) Leo (B) the captain") == ("Who cooks?", ("Leo", "the captain"))
    # no (A), one option, or letters that do not start at A are no options
    assert lettered_options("Who cooks? (B) Leo (C) Max")[1] == ()
    assert lettered_options("Who cooks? (A) Leo")[1] == ()
    assert lettered_options("What does f(A) return?")[1] == ()


def test_a_multiple_choice_question_is_answered_with_the_option_the_passages_support(minilm) -> None:
    story = [
        Passage(
            1,
            "Captain Chaos",
            "The ship left Mars in the spring. We picked up our new cook on Phobos, a quiet moon "
            "with one dusty port. The cook was a tall man named Andy Laney who hated canned beans. "
            "The captain slept through the whole stop.",
            1.0,
        ),
        Passage(
            2, "Captain Chaos", "Later the crew played cards in the galley until the lights went out.", 0.5
        ),
    ]
    reader = Reader(minilm)
    question = (
        "On which moon did the crew pick up the new cook?\n(A) Deimos\n(B) Titan\n(C) Phobos\n(D) Europa"
    )
    result = reader.read(question, story)
    assert (result.kind, result.found, result.answer) == ("option", True, "(C) Phobos")
    assert "Phobos" in result.evidence[0].sentence and result.evidence[0].n == 1
    assert result.confidence > 0 and result.trace["options"][2] == max(result.trace["options"])
    assert result.text.startswith("(C) Phobos [1]")
    # the same question without its options is read as a free question
    assert reader.read("On which moon did the crew pick up the new cook?", story).kind != "option"
    # no option's words are in the passages: chosen by meaning, with no confidence
    guess = reader.read("What did the cook hate?\n(A) raw fish\n(B) loud music", story)
    assert (
        guess.kind == "option"
        and guess.confidence == 0.0
        and guess.answer in ("(A) raw fish", "(B) loud music")
    )


def test_choice_by_each_options_own_event_and_a_century() -> None:
    passages = [
        Passage(
            1,
            "The Dandy Warhols",
            "The Dandy Warhols are an American rock band, formed in Portland in 1994.",
            1.0,
        ),
        Passage(
            2,
            "Robert Young (musician)",
            "Robert Young (1964 - 9 September 2014) was a Scottish musician.",
            0.9,
        ),
    ]
    result = Reader().read(
        "Which came first the forming of The Dandy Warhols or the birth of Robert Young?", passages
    )
    assert (result.kind, result.answer) == ("choice", "Robert Young")
    magazines = [
        Passage(
            1,
            "Home Monthly",
            "Home Monthly was a women's magazine published in Pittsburgh in the late 19th century.",
            1.0,
        ),
        Passage(
            2, "Mirabella", "Mirabella was a women's magazine published from June 1989 to April 2000.", 0.9
        ),
    ]
    result = Reader().read(
        "Which women's magazine was published first, Mirabella or Home Monthly?", magazines
    )
    assert (result.kind, result.answer) == ("choice", "Home Monthly")
    assert "1885" in result.trace["compared"]


def test_what_two_named_things_have_in_common() -> None:
    directors = [
        Passage(
            1,
            "Alan Crosland",
            "Alan Crosland (August 10, 1894 - July 16, 1936) was an American film director.",
            1.0,
        ),
        Passage(
            2, "Kurt Voss", "Kurt Voss is an American film director and screenwriter from Los Angeles.", 0.9
        ),
    ]
    result = Reader().read("What profession did Alan Crosland and Kurt Voss both hold?", directors)
    # the shared ending of what each page calls its subject; no nationality for a profession
    assert (result.kind, result.answer, result.found) == ("common", "film director", True)
    assert {e.n for e in result.evidence} >= {1, 2}
    writers = [
        Passage(1, "E. B. White", 'Elwyn Brooks "E. B." White (1899 - 1985) was an American writer.', 1.0),
        Passage(
            2,
            "Dan Masterson",
            "Dan Masterson (born February 22, 1934) is an American poet born in Buffalo.",
            0.9,
        ),
    ]
    result = Reader().read("What do E. B. White and Dan Masterson have in common?", writers)
    assert (result.kind, result.answer) == ("common", "American")
    # a profession question with nothing shared is left to the span stages
    result = Reader().read("What profession did E. B. White and Dan Masterson both hold?", writers)
    assert result.kind != "common"


def test_both_of_a_nationality_reads_each_ones_nationality() -> None:
    passages = [
        Passage(
            1,
            "King Vidor",
            "King Vidor (February 8, 1894 - November 1, 1982) was an American film director.",
            0.9,
        ),
        Passage(
            2,
            "Géza von Cziffra",
            "Géza von Cziffra (1900 - 1989) was a Hungarian film director who directed American films.",
            0.8,
        ),
        Passage(
            3, "John Ford", "John Ford (1894 - 1973) was an American film director, known for westerns.", 0.7
        ),
    ]
    mixed = Reader().read("Are King Vidor and Géza von Cziffra both American directors?", passages)
    # both passages say "American" and "director": the words alone would say yes
    assert (mixed.kind, mixed.answer) == ("yesno", "no")
    same = Reader().read("Are King Vidor and John Ford both American directors?", passages)
    assert (same.kind, same.answer) == ("yesno", "yes")


def test_span_ranker_answers_what_no_rule_reads() -> None:
    passages = [
        Passage(1, "Peru", "Lima is the capital of Peru. Peru borders Chile.", 0.9),
        Passage(2, "Chile", "Santiago is the capital of Chile.", 0.5),
    ]
    result = Reader().read("What is the capital of Peru?", passages)
    assert result.kind == "span" and result.found
    assert result.answer == "Lima" and result.evidence[0].n == 1
    assert 0.0 < result.confidence <= 1.0


def test_abstains_when_the_passages_do_not_hold_the_answer() -> None:
    result = Reader().read("How many moons does Jupiter have?", PASSAGES[:2])
    assert not result.found
    assert result.answer == ""
    assert result.text.startswith("The documents do not contain")
    assert result.evidence  # the closest sentences are still shown


def test_threshold_setting_and_bad_model_folder(tmp_path) -> None:
    never = Reader(threshold=1.01).read("Which company made Alpha?", PASSAGES)
    assert never.kind == "span" and not never.found and never.answer == ""
    with pytest.raises(ConfigError, match="train-reader"):
        _ = Reader(model=tmp_path).ranker


def test_why_question_answers_with_a_sentence() -> None:
    texts = [
        Passage(
            1,
            "Crash safety",
            "The index survives a crash because every write goes to a new file and the manifest is "
            "replaced atomically. Other parts are unrelated.",
            0.9,
        )
    ]
    result = Reader().read("Why does the index survive a crash?", texts)
    assert result.kind == "sentence"
    assert "atomically" in result.answer


def test_why_question_is_not_answered_by_a_heading(onnx_minilm) -> None:
    """`make demo`'s second question once got the heading of the page as its answer: with
    MiniLM, the heading is the sentence most like the question."""
    texts = [
        Passage(
            1,
            "operations",
            "# Operations: the index on disk, crashes, large corpora\n\n## The index on disk\n\n```\n"
            "my-index/\n  manifest.json        format version, generation, config, models, counts\n"
            "  index.sqlite         documents, chunks (offsets), embedding cache (WAL mode)\n```\n\n"
            "An `index` killed at any point, even by SIGKILL, leaves the last committed index loadable.",
            0.9,
        )
    ]
    result = Reader(onnx_minilm).read("Why does the index survive a crash?", texts)
    assert result.kind == "sentence" and not result.answer.startswith("#")
    assert "SIGKILL" in result.answer


def test_why_question_is_not_answered_by_a_table_row(onnx_minilm) -> None:
    """`make demo`'s second question got a README table row once the row named the index's
    packages: a Markdown table row is not a sentence that answers a "why"."""
    texts = [
        Passage(
            1,
            "README",
            "## The index on disk, and what survives a crash\n\n| | |\n| --- | --- |\n"
            "| `storage/` | the index on disk: why an index survives a crash, see operations.md |\n\n"
            "An `index` killed at any point, even by SIGKILL, leaves the last committed index loadable.",
            0.9,
        )
    ]
    result = Reader(onnx_minilm).read("Why does the index survive a crash?", texts)
    assert result.kind == "sentence" and not result.answer.lstrip().startswith(("#", "|"))
    assert "SIGKILL" in result.answer


def test_empty_passages() -> None:
    result = Reader().read("Who is it?", [])
    assert not result.found and result.evidence == ()
    assert np.isfinite(result.confidence)


def test_known_entities_match_names_longest_first_and_fall_back_on_unknown_capitals():
    names = frozenset({"Korvin", "Tr'en", "New York", "New York Times", "the United States"})
    # the possessive is its own word, the longest name wins, the opening "Why" names nothing
    assert known_entities("Why did the Tr'en leave Korvin's door unlocked?", names) == ("Tr'en", "Korvin")
    assert known_entities("Who wrote for the New York Times in 1990?", names) == ("New York Times",)
    assert known_entities("Is the United States  large?", names) == ("the United States",)
    # no capitalized word past the opening: no entities, no parse needed
    assert known_entities("What happens when indexing is killed halfway?", names) == ()
    # a capitalized word no name covers: the question must be parsed
    assert known_entities("Did Korvin meet Gandalf?", names) is None
    assert known_entities("Korvin met whom?", frozenset()) is None
    assert known_entities("who plays larry in lost in space", names) is None
    assert known_entities("What did I say?", frozenset()) == ()


def test_a_file_name_title_is_never_a_candidate() -> None:
    from paretorag.answering.reader.candidates import file_like, gather

    passages = [
        Passage(1, "captain_chaos", "We picked up our new cook on Phobos. Captain Chaos was glad.", 0.9),
        Passage(2, "Andean Republic", "It is a country. Lima is its capital.", 0.5),
    ]
    reading = read_passages(analyze("What is the name of the new cook?"), passages, None)
    texts = {c.text for c in gather(reading)}
    assert "captain_chaos" not in texts and "Andean Republic" in texts
    assert file_like("notes.md") and file_like("reader") and not file_like("iPhone")
