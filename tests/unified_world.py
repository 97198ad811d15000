"""A small corpus and a scripted LLM for the unified framework's methods.

The LLM answers each prompt of the builders and operators as a capable chat model
answers it: the extraction answers below (entities with types and descriptions, triples,
relations with keywords) are what the prompts ask of each passage, written in the
formats the prompts show; the agent steps choose the candidates that share words with
the question; the map step answers with scored JSON points; summaries and answers are
the first sentences of the texts. Passages (rows)::

    0 Marie Curie, born in Warsaw      3 Nobel Prize in Physics 1903
    1 Warsaw, capital of Poland        4 Nobel Prize awarded in Stockholm
    2 Pierre and Marie marry in Sceaux 5 Eiffel Tower in Paris
                                       6 Sceaux, a suburb of Paris
"""

from __future__ import annotations

import json
import re

from paretorag.graphs.kg_prompts import COMPLETE, RECORD, TUPLE
from paretorag.ingest.files import make_document
from paretorag.providers.base import Request
from paretorag.providers.llm import FakeLLM
from paretorag.types import Document

TEXTS = [
    ("Marie Curie", "Marie Curie was born in Warsaw. She studied physics at the University of Paris."),
    ("Warsaw", "Warsaw is the capital of Poland and lies on the Vistula river."),
    ("Curie marriage", "Pierre Curie married Marie Curie in 1895 in Sceaux."),
    ("Nobel 1903", "Marie Curie won the Nobel Prize in Physics in 1903 together with Pierre Curie."),
    ("Nobel Prize", "The Nobel Prize is awarded in Stockholm, the capital of Sweden."),
    ("Eiffel Tower", "The Eiffel Tower is a wrought-iron tower in Paris, completed in 1889."),
    ("Sceaux", "Sceaux is a commune in the southern suburbs of Paris."),
]
# per passage: (name, type, description) and (source, relation, target, description, keywords)
ENTITIES: list[list[tuple[str, str, str]]] = [
    [
        ("Marie Curie", "person", "A physicist born in Warsaw who studied in Paris."),
        ("Warsaw", "geo", "The city where Marie Curie was born."),
        ("University of Paris", "organization", "The university where Marie Curie studied physics."),
    ],
    [
        ("Warsaw", "geo", "The capital of Poland, on the Vistula."),
        ("Poland", "geo", "A country whose capital is Warsaw."),
        ("Vistula", "geo", "The river Warsaw lies on."),
    ],
    [
        ("Pierre Curie", "person", "A physicist who married Marie Curie in 1895."),
        ("Marie Curie", "person", "She married Pierre Curie in Sceaux."),
        ("Sceaux", "geo", "The town where the Curies married."),
    ],
    [
        ("Marie Curie", "person", "Winner of the 1903 Nobel Prize in Physics."),
        ("Nobel Prize", "event", "The prize Marie and Pierre Curie won in 1903."),
        ("Pierre Curie", "person", "Co-winner of the 1903 Nobel Prize in Physics."),
    ],
    [
        ("Nobel Prize", "event", "A prize awarded in Stockholm."),
        ("Stockholm", "geo", "The capital of Sweden, where the Nobel Prize is awarded."),
        ("Sweden", "geo", "The country whose capital is Stockholm."),
    ],
    [
        ("Eiffel Tower", "organization", "A wrought-iron tower in Paris completed in 1889."),
        ("Paris", "geo", "The city of the Eiffel Tower."),
    ],
    [
        ("Sceaux", "geo", "A commune in the southern suburbs of Paris."),
        ("Paris", "geo", "The city Sceaux is a suburb of."),
    ],
]
RELATIONS: list[list[tuple[str, str, str, str, str]]] = [
    [
        ("Marie Curie", "born in", "Warsaw", "Marie Curie was born in Warsaw.", "birthplace"),
        (
            "Marie Curie",
            "studied at",
            "University of Paris",
            "Marie Curie studied physics there.",
            "education",
        ),
    ],
    [
        ("Warsaw", "capital of", "Poland", "Warsaw is the capital of Poland.", "capital city"),
        ("Warsaw", "lies on", "Vistula", "Warsaw lies on the Vistula river.", "geography, river"),
    ],
    [
        ("Pierre Curie", "married", "Marie Curie", "Pierre Curie married Marie Curie in 1895.", "marriage"),
        ("Pierre Curie", "married in", "Sceaux", "The Curies married in Sceaux.", "wedding place"),
    ],
    [
        ("Marie Curie", "won", "Nobel Prize", "Marie Curie won the Nobel Prize in Physics in 1903.", "award"),
        ("Pierre Curie", "won", "Nobel Prize", "Pierre Curie shared the 1903 Nobel Prize.", "award"),
    ],
    [
        ("Nobel Prize", "awarded in", "Stockholm", "The Nobel Prize is awarded in Stockholm.", "ceremony"),
        ("Stockholm", "capital of", "Sweden", "Stockholm is the capital of Sweden.", "capital city"),
    ],
    [("Eiffel Tower", "located in", "Paris", "The Eiffel Tower stands in Paris.", "landmark")],
    [("Sceaux", "suburb of", "Paris", "Sceaux is a suburb of Paris.", "suburb")],
]


# the high-level keywords a model gives for the questions' words (LightRAG's prompt)
THEMES = {"born": "birthplace", "capital": "capital city", "awarded": "award ceremony", "country": "country"}


def documents() -> list[Document]:
    return [make_document(title, text, f"w#{i}", presplit=True) for i, (title, text) in enumerate(TEXTS)]


def _passage(text: str) -> int:
    for i, (_, t) in enumerate(TEXTS):
        if t in text:
            return i
    return -1


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3}


def _records(i: int, rich: bool) -> str:
    t = TUPLE
    recs = [f'("entity"{t}"{n.upper()}"{t}"{ty.upper()}"{t}"{d}")' for n, ty, d in ENTITIES[i]]
    for s, _, o, d, kw in RELATIONS[i]:
        mid = f'{t}"{kw}"' if rich else ""
        recs.append(f'("relationship"{t}"{s.upper()}"{t}"{o.upper()}"{t}"{d}"{mid}{t}8)')
    return RECORD.join(recs) + COMPLETE


def _choose(prompt: str) -> str:
    question = prompt.split("Question: ", 1)[1].split("\n", 1)[0]
    listing = prompt.split("Candidates:\n", 1)[1]
    q = _words(question)
    scored = []
    for line in listing.splitlines():
        m = re.match(r"(\d+)\. (.*)", line)
        if m:
            overlap = len(q & _words(m.group(2)))
            if overlap:
                scored.append((-overlap, int(m.group(1))))
    return ", ".join(str(n) for _, n in sorted(scored)[:3]) or "none"


def reply(request: Request) -> str:
    """The scripted model (see the module docstring)."""
    prompt = request.messages[-1].content
    if request.task.kind == "summarize":
        return " ".join(t.split(". ")[0].rstrip(".") + "." for t in request.task.texts)
    if prompt.startswith("Your task is to extract named entities"):
        i = _passage(prompt.rsplit("Paragraph:", 1)[1])
        return json.dumps({"named_entities": [n for n, _, _ in ENTITIES[i]] if i >= 0 else []})
    if prompt.startswith("Your task is to construct an RDF"):
        i = _passage(prompt.rsplit("Paragraph:", 1)[1])
        return json.dumps({"triples": [[s, r, o] for s, r, o, _, _ in RELATIONS[i]] if i >= 0 else []})
    if prompt.startswith("-Goal-"):
        i = _passage(prompt.rsplit("Text:", 1)[1])
        return _records(i, "relationship_keywords" in prompt) if i >= 0 else COMPLETE
    if prompt.startswith("MANY entities"):
        return COMPLETE
    if prompt.startswith("It appears"):
        return "NO"
    if "Write a comprehensive report" in prompt:
        names = re.findall(r"^\d+,([^,]+),", prompt, re.M)
        title = " and ".join(n.strip().title() for n in names[:2]) or "Community"
        return json.dumps(
            {
                "title": title,
                "summary": f"The community around {title}.",
                "rating": 6.5,
                "rating_explanation": "Moderately important.",
                "findings": [{"summary": title, "explanation": f"{title} are related."}],
            }
        )
    if "high_level_keywords" in prompt:
        question = prompt.rsplit('Query: "', 1)[1].split('"', 1)[0]
        low = list(dict.fromkeys(n for ents in ENTITIES for n, _, _ in ents if n.lower() in question.lower()))
        high = [theme for word, theme in THEMES.items() if word in question.lower()]
        return json.dumps({"high_level_keywords": high, "low_level_keywords": low})
    if "numbered list of candidate" in prompt:
        return _choose(prompt)
    if prompt.startswith("---Role---") and "---Data tables---" in prompt:
        question = prompt.rsplit("---Question---\n", 1)[1]
        data = prompt.split("---Data tables---\n", 1)[1].split("\n\n---Question---", 1)[0]
        overlap = len(_words(question) & _words(data))
        first = data.split("\n", 2)[1] if "\n" in data else data
        return json.dumps({"points": [{"description": f"{first} [1]", "score": min(100, 10 * overlap)}]})
    if request.task.kind == "answer":
        return f"{request.task.texts[0].split('. ')[0]} [1]" if request.task.texts else "I do not know."
    return "none"


def scripted_llm() -> FakeLLM:
    return FakeLLM(reply, name="scripted")


__all__ = ["ENTITIES", "RELATIONS", "TEXTS", "documents", "reply", "scripted_llm"]
