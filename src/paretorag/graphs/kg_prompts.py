"""Extraction prompts and tolerant parsers of the LLM knowledge graphs (unified framework §4).

- KG (HippoRAG §3.1, App. "Prompts"): named-entity recognition, then OpenIE triples
  conditioned on the entities; both answer JSON (``{"named_entities": [...]}``,
  ``{"triples": [[s, r, o], ...]}``). Two calls per chunk.
- TKG (GraphRAG §2.2 / nano-graphrag ``entity_extraction``) and RKG (LightRAG §3.1,
  relationships with keywords): one call in the tuple-delimited record format, then
  ``max_gleaning`` continuation rounds in the same conversation ("MANY entities were
  missed..."), with the YES/NO loop check between rounds (skipped after the last one,
  as both implementations do): ``1 + max_gleaning`` calls per chunk.

Each paper's prompt is kept to its instructions and one short worked example (the
papers' repos ship two or three), which keeps the prompt tokens per chunk below theirs.

Parsing never evaluates model output: JSON goes through ``json.loads`` after a repair
pass (code fences, the outermost braces, trailing commas, curly quotes); records are
split on the delimiters and on new lines, quotes stripped. A response that still
yields nothing is retried once as a follow-up turn asking for the format (a different
prompt, so the response cache does not serve the bad answer again); a second failure
counts as an empty extraction (``stats["unparsed"]``), never an exception.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..providers.base import Message, Request, Task

TUPLE, RECORD, COMPLETE = "<|>", "##", "<|COMPLETE|>"
GRAPHRAG_TYPES = ("organization", "person", "geo", "event")
LIGHTRAG_TYPES = ("organization", "person", "geo", "event", "category")

NER_PROMPT = """Your task is to extract named entities from the given paragraph.
Respond with a JSON list of entities.

Paragraph:
Radio City is India's first private FM radio station and was started on 3 July 2001. It plays Hindi, English and regional songs.

{{"named_entities": ["Radio City", "India", "3 July 2001", "Hindi", "English"]}}

Paragraph:
{text}

"""

OPENIE_PROMPT = """Your task is to construct an RDF (Resource Description Framework) graph from the given passage and named entity list.
Respond with a JSON list of triples, with each triple representing a relationship in the RDF graph.
Pay attention to the following requirements:
- Each triple should contain at least one, but preferably two, of the named entities in the list.
- Clearly resolve pronouns to their specific names to maintain clarity.

Paragraph:
Radio City is India's first private FM radio station and was started on 3 July 2001. It plays Hindi, English and regional songs.

{{"named_entities": ["Radio City", "India", "3 July 2001", "Hindi", "English"]}}

{{"triples": [["Radio City", "located in", "India"], ["Radio City", "is", "private FM radio station"], ["Radio City", "started on", "3 July 2001"], ["Radio City", "plays songs in", "Hindi"], ["Radio City", "plays songs in", "English"]]}}

Paragraph:
{text}

{entities}

"""

_RELATION_FIELDS = {
    "tkg": "<source_entity>{t}<target_entity>{t}<relationship_description>{t}<relationship_strength>",
    "rkg": "<source_entity>{t}<target_entity>{t}<relationship_description>{t}<relationship_keywords>{t}<relationship_strength>",
}
_EXAMPLE_REL = {
    "tkg": '("relationship"{t}"ALEX"{t}"TAYLOR"{t}"Alex reports to Taylor, whose authority shapes his work."{t}7)',
    "rkg": '("relationship"{t}"ALEX"{t}"TAYLOR"{t}"Alex reports to Taylor, whose authority shapes his work."{t}"authority, reporting line"{t}7)',
}

EXTRACT_PROMPT = """-Goal-
Given a text document and a list of entity types, identify all entities of those types from the text and all relationships among the identified entities.

-Steps-
1. Identify all entities. For each identified entity, extract the following information:
- entity_name: Name of the entity, capitalized
- entity_type: One of the following types: [{types}]
- entity_description: Comprehensive description of the entity's attributes and activities
Format each entity as ("entity"{t}<entity_name>{t}<entity_type>{t}<entity_description>)

2. From the entities identified in step 1, identify all pairs of (source_entity, target_entity) that are *clearly related* to each other.
For each pair of related entities, extract the following information:
- source_entity: name of the source entity, as identified in step 1
- target_entity: name of the target entity, as identified in step 1
- relationship_description: explanation as to why you think the source entity and the target entity are related to each other
{keywords_step}- relationship_strength: a numeric score indicating strength of the relationship between the source entity and target entity
Format each relationship as ("relationship"{t}{relation_fields})

3. Return output in English as a single list of all the entities and relationships identified in steps 1 and 2. Use **{r}** as the list delimiter.

4. When finished, output {c}

-Example-
Entity_types: [person, organization]
Text: Alex reported to Taylor, the director of the Cypher unit.
Output:
("entity"{t}"ALEX"{t}"PERSON"{t}"Alex is an agent who reports to Taylor."){r}
("entity"{t}"TAYLOR"{t}"PERSON"{t}"Taylor directs the Cypher unit."){r}
("entity"{t}"CYPHER UNIT"{t}"ORGANIZATION"{t}"The unit Taylor directs."){r}
{example_rel}{r}
("relationship"{t}"TAYLOR"{t}"CYPHER UNIT"{t}"Taylor is the director of the Cypher unit."{t}{example_kw}9){c}

-Real Data-
Entity_types: [{types}]
Text: {text}
Output:
"""

CONTINUE_PROMPT = "MANY entities were missed in the last extraction.  Add them below using the same format:\n"
LOOP_PROMPT = (
    "It appears some entities may have still been missed.  "
    "Answer YES | NO if there are still entities that need to be added.\n"
)
JSON_RETRY = 'Your answer was not valid JSON. Answer again with only the JSON object, e.g. {"key": [...]}.'
RECORD_RETRY = (
    'Your answer had no records in the required format. Answer again with only ("entity"<|>...) and '
    '("relationship"<|>...) records separated by ## and ending with <|COMPLETE|>.'
)
SUMMARIZE_DESCRIPTIONS = """You are a helpful assistant responsible for generating a comprehensive summary of the data provided below.
Given one or two entities, and a list of descriptions, all related to the same entity or group of entities.
Please concatenate all of these into a single, comprehensive description. Make sure to include information collected from all the descriptions.
If the provided descriptions are contradictory, please resolve the contradictions and provide a single, coherent summary.
Make sure it is written in third person, and include the entity names so we have the full context.

#######
-Data-
Entities: {name}
Description List: {descriptions}
#######
Output:
"""


def extract_prompt(kind: str, text: str, types: tuple[str, ...]) -> str:
    """GraphRAG's (``tkg``) or LightRAG's (``rkg``, with relationship keywords) extraction prompt."""
    t = TUPLE
    rkg = kind == "rkg"
    return EXTRACT_PROMPT.format(
        types=", ".join(types),
        t=t,
        r=RECORD,
        c=COMPLETE,
        relation_fields=_RELATION_FIELDS[kind].format(t=t),
        example_rel=_EXAMPLE_REL[kind].format(t=t),
        example_kw=f'"leadership"{t}' if rkg else "",
        keywords_step=(
            "- relationship_keywords: one or more high-level key words that summarize the overarching "
            "nature of the relationship\n"
            if rkg
            else ""
        ),
        text=text,
    )


def request(turns: list[tuple[str, str]], prompt: str, max_tokens: int) -> Request:
    """A request continuing a conversation: earlier ``(user, assistant)`` turns, then ``prompt``."""
    msgs: list[Message] = []
    for user, answer in turns:
        msgs += [Message("user", user), Message("assistant", answer)]
    msgs.append(Message("user", prompt))
    return Request(tuple(msgs), Task("other"), max_tokens=max_tokens)


@dataclass
class Records:
    """What was extracted from one chunk: entities ``(name, type, description)`` and
    relations ``(source, target, relation, description, keywords)``."""

    entities: list[tuple[str, str, str]] = field(default_factory=list)
    relations: list[tuple[str, str, str, str, str]] = field(default_factory=list)


_FENCE = re.compile(r"```(?:json)?", re.IGNORECASE)
_TRAILING_COMMA = re.compile(r",\s*([\]}])")


def parse_json(text: str) -> Any:
    """The JSON value in a model's answer, after repairs; ``None`` if there is none.

    Repairs: code fences removed, the outermost ``{...}`` (or ``[...]``) cut out, curly
    quotes straightened, trailing commas removed. Never evaluates the text.

    Examples
    --------
    >>> parse_json('Sure! ```json\\n{"triples": [["a", "b", "c"],]}\\n```')
    {'triples': [['a', 'b', 'c']]}
    >>> parse_json("no json here") is None
    True
    """
    s = _FENCE.sub("", text).replace("\u201c", '"').replace("\u201d", '"').strip()
    for open_, close in (("{", "}"), ("[", "]")):
        a, b = s.find(open_), s.rfind(close)
        if a < 0 or b <= a:
            continue
        body = s[a : b + 1]
        for candidate in (body, _TRAILING_COMMA.sub(r"\1", body)):
            try:
                return json.loads(candidate)
            except json.JSONDecodeError:
                continue
    return None


def _strings(value: Any) -> list[str]:
    return [v.strip() for v in value if isinstance(v, str) and v.strip()] if isinstance(value, list) else []


def parse_ner(text: str) -> list[str] | None:
    """HippoRAG's NER answer: the entity strings, or ``None`` when unparseable."""
    data = parse_json(text)
    if isinstance(data, dict):
        return _strings(data.get("named_entities"))
    if isinstance(data, list):
        return _strings(data)
    return None


def parse_triples(text: str) -> list[tuple[str, str, str]] | None:
    """HippoRAG's OpenIE answer: ``(subject, relation, object)`` triples (others dropped)."""
    data = parse_json(text)
    rows = data.get("triples") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        return None
    out = []
    for row in rows:
        parts = _strings(row)
        if len(parts) == 3 and len(row) == 3:
            out.append((parts[0], parts[1], parts[2]))
    return out


def _clean(field_: str) -> str:
    return field_.strip().strip("()").strip().strip("\"'").strip()


def parse_records(text: str, kind: str) -> tuple[Records, bool]:
    """Entity / relationship records of GraphRAG (``tkg``) or LightRAG (``rkg``) format.

    Returns the records and whether the answer was usable (some record, or an answer
    that is empty or only the completion marker, as a gleaning round may be).
    """
    out = Records()
    body = text.replace(COMPLETE, RECORD)
    for raw in re.split(r"##|\n", body):
        m = re.search(r"\((.*)\)", raw)
        content = m.group(1) if m else raw
        parts = [_clean(p) for p in content.split(TUPLE)]
        if len(parts) < 2:
            continue
        head = parts[0].lower()
        if head == "entity" and len(parts) >= 4 and parts[1]:
            out.entities.append((parts[1], parts[2].upper(), parts[3]))
        elif head == "relationship" and len(parts) >= 4 and parts[1] and parts[2]:
            keywords = parts[4] if kind == "rkg" and len(parts) >= 6 else ""
            out.relations.append((parts[1], parts[2], "", parts[3], keywords))
    ok = bool(out.entities or out.relations) or not body.replace(RECORD, "").strip()
    return out, ok


__all__ = [
    "COMPLETE",
    "CONTINUE_PROMPT",
    "GRAPHRAG_TYPES",
    "JSON_RETRY",
    "LIGHTRAG_TYPES",
    "LOOP_PROMPT",
    "NER_PROMPT",
    "OPENIE_PROMPT",
    "RECORD",
    "RECORD_RETRY",
    "SUMMARIZE_DESCRIPTIONS",
    "TUPLE",
    "Records",
    "extract_prompt",
    "parse_json",
    "parse_ner",
    "parse_records",
    "parse_triples",
    "request",
]
