"""Syntactic complexity features of a question (EA-GraphRAG §3.2, papers/ea-graphrag.txt).

EA-GraphRAG's featurizer phi(q) parses the question and assembles structural, dependency,
semantic, lexical, tree and interaction features (§3.2.1-§3.2.4, d' > 80 raw features)
from which mutual information keeps the most discriminative (§3.2.5; done at training
time, :mod:`paretorag.training.router`). Everything here comes from **one spaCy parse**
(``en_core_web_sm``: tagger, dependency parser, NER; no lemmatizer or attribute ruler,
so parts of speech are read from the fine-grained Penn tags).

**Approximation.** The paper counts Lu's (2010) nine production units with Tregex
patterns over Stanza *constituency* trees (§3.2.1). Stanza is not available here, so
the units are read from the dependency tree instead:

- ``W`` words: tokens that are not punctuation; ``S`` sentences: spaCy's sentences;
- ``C`` clauses: verbal heads (``VB*``/``MD``) with a subject child (``nsubj``,
  ``nsubjpass``, ``csubj``, ``csubjpass``, ``expl``), plus a sentence root that has none
  (wh-questions often parse their subject as ``attr``/``pobj``);
- ``DC`` dependent clauses: clause heads attached as ``advcl``, ``ccomp``, ``csubj``,
  ``csubjpass``, ``relcl`` or ``acl``;
- ``T`` T-units: sentence roots plus clauses conjoined to a root (``conj``);
  ``CT`` complex T-units: T-units with a dependent clause in their subtree;
- ``CP`` coordinate phrases: ``conj`` tokens that are not T-units;
- ``CN`` complex nominals: nouns with an ``amod``, ``poss``, ``prep``, ``relcl``,
  ``acl``, ``appos``, ``compound`` or ``nmod`` child, plus clausal subjects;
- ``VP`` verb phrases: verbs that are not auxiliaries.

Lu's 14 ratios (MLS, MLT, MLC, C/S, VP/T, C/T, DC/C, DC/T, T/S, CT/T, CP/T, CP/C, CN/T,
CN/C) follow from these counts with a zero denominator giving 0. Feature names are
stable: a trained router stores the names it selected and refuses a featurizer that
lacks one.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...providers.nlp import MODEL, load_spacy

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Token

FEATURIZER_VERSION = 1

_SUBJ = frozenset({"nsubj", "nsubjpass", "csubj", "csubjpass", "expl"})
_DEP_CLAUSE = frozenset({"advcl", "ccomp", "csubj", "csubjpass", "relcl", "acl"})
_NOMINAL_MODS = frozenset({"amod", "poss", "prep", "relcl", "acl", "appos", "compound", "nmod"})
_NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS"})
_CONTENT_PREFIX = ("NN", "VB", "JJ", "RB", "CD")
_COMPARATIVE = frozenset({"JJR", "JJS", "RBR", "RBS"})
_NEGATIONS = frozenset({"not", "n't", "no", "never", "none", "neither", "nor"})
# dependency relations counted one by one (§3.2.2 relation type counts)
RELATIONS: tuple[str, ...] = (
    "nsubj", "nsubjpass", "dobj", "pobj", "prep", "amod", "advmod", "compound", "poss",
    "conj", "cc", "mark", "advcl", "relcl", "acl", "ccomp", "xcomp", "aux", "auxpass",
    "neg", "appos", "attr", "det", "nummod", "case", "npadvmod", "agent", "dative", "pcomp",
)  # fmt: skip
ENTITY_TYPES: tuple[str, ...] = (
    "PERSON", "ORG", "GPE", "LOC", "DATE", "NORP", "WORK_OF_ART", "EVENT", "FAC",
    "CARDINAL", "TIME", "LANGUAGE", "PRODUCT",
)  # fmt: skip
QUESTION_TYPES: tuple[str, ...] = (
    "who", "whom", "whose", "what", "which", "when", "where", "why", "how", "how_many",
    "yes_no", "other",
)  # fmt: skip
_AUX_START = frozenset({"is", "are", "was", "were", "do", "does", "did", "can", "could", "has", "have",
                        "had", "will", "would", "should", "may", "might", "am"})  # fmt: skip
_LU_UNITS = ("W", "S", "C", "DC", "T", "CT", "CP", "CN", "VP")
_LU_RATIOS = (
    ("MLS", "W", "S"), ("MLT", "W", "T"), ("MLC", "W", "C"), ("C_S", "C", "S"), ("VP_T", "VP", "T"),
    ("C_T", "C", "T"), ("DC_C", "DC", "C"), ("DC_T", "DC", "T"), ("T_S", "T", "S"), ("CT_T", "CT", "T"),
    ("CP_T", "CP", "T"), ("CP_C", "CP", "C"), ("CN_T", "CN", "T"), ("CN_C", "CN", "C"),
)  # fmt: skip


def _names() -> tuple[str, ...]:
    names = [f"lu.{u}" for u in _LU_UNITS] + [f"lu.{r[0]}" for r in _LU_RATIOS]
    names += [
        "dep.max_distance", "dep.mean_distance", "dep.long_range", "dep.long_range_ratio",
        "dep.root_children", "dep.imbalance_std", "dep.imbalance_max",
    ]  # fmt: skip
    names += [f"rel.{r}" for r in RELATIONS]
    names += [
        "tree.max_depth", "tree.mean_depth", "tree.max_width", "tree.leaves", "tree.leaf_ratio",
        "tree.mean_branching", "tree.max_branching", "tree.depth_width_ratio",
    ]  # fmt: skip
    names += ["ent.count", "ent.density", "ent.types", "ent.tokens"] + [f"ent.{t}" for t in ENTITY_TYPES]
    names += [
        "role.agents", "role.patients", "role.temporal", "role.locative",
        "lex.tokens", "lex.chars", "lex.mean_word_len", "lex.type_token_ratio", "lex.content_ratio",
        "lex.content_function_ratio", "lex.nouns", "lex.proper_nouns", "lex.verbs", "lex.adjectives",
        "lex.numbers", "lex.possessives", "lex.prepositions", "lex.capitalized",
    ]  # fmt: skip
    names += [f"qtype.{t}" for t in QUESTION_TYPES]
    names += [
        "mark.coordination", "mark.subordination", "mark.negation", "mark.passive", "mark.comparative",
        "mark.wh_words", "mark.and_or",
    ]  # fmt: skip
    names += [
        "int.tokens_per_clause", "int.entities_per_token", "int.depth_per_token",
        "int.connectors_per_clause", "int.prepositions_per_token", "int.nouns_per_verb",
        "int.entities_x_depth", "int.possessive_chain",
    ]  # fmt: skip
    return tuple(names)


FEATURE_NAMES: tuple[str, ...] = _names()


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


def _is_verb(tok: Token) -> bool:
    return tok.tag_.startswith("VB") or tok.tag_ == "MD"


def _is_clause(tok: Token) -> bool:
    """A clause head (Lu's C, from dependencies): a verbal head with a subject, or a verbal root."""
    if not _is_verb(tok) or tok.dep_ in ("aux", "auxpass"):
        return False
    return any(c.dep_ in _SUBJ for c in tok.children) or tok.dep_ == "ROOT"


def _question_type(doc: Doc) -> str:
    words = [t.lower_ for t in doc if not t.is_punct]
    if not words:
        return "other"
    for i, w in enumerate(words[:4]):
        if w == "how":
            nxt = words[i + 1] if i + 1 < len(words) else ""
            return "how_many" if nxt in ("many", "much", "long", "old", "far") else "how"
        if w in QUESTION_TYPES:
            return w
    return "yes_no" if words[0] in _AUX_START else "other"


def features(doc: Doc) -> np.ndarray:
    """The raw feature vector phi(q) of a parsed question, in :data:`FEATURE_NAMES` order (float64)."""
    toks = list(doc)
    words = [t for t in toks if not t.is_punct and not t.is_space]
    f: dict[str, float] = {}
    # Lu's units, approximated from dependencies (module docstring)
    clauses = [t for t in toks if _is_clause(t)]
    dep_clauses = [t for t in clauses if t.dep_ in _DEP_CLAUSE]
    roots = [t for t in toks if t.dep_ == "ROOT"]
    t_units = roots + [t for t in clauses if t.dep_ == "conj" and t.head.dep_ == "ROOT"]
    t_ids = {t.i for t in t_units}
    dc_ids = {t.i for t in dep_clauses}

    def has_dc(t: Token) -> bool:
        return any(s.i in dc_ids for s in t.subtree if s.i != t.i)

    units = {
        "W": len(words),
        "S": sum(1 for _ in doc.sents) if len(doc) else 0,
        "C": len(clauses),
        "DC": len(dep_clauses),
        "T": len(t_units),
        "CT": sum(1 for t in t_units if has_dc(t)),
        "CP": sum(1 for t in toks if t.dep_ == "conj" and t.i not in t_ids),
        "CN": sum(
            1
            for t in toks
            if (t.tag_ in _NOUN_TAGS and any(c.dep_ in _NOMINAL_MODS for c in t.children))
            or t.dep_ in ("csubj", "csubjpass")
        ),
        "VP": sum(1 for t in toks if t.tag_.startswith("VB") and t.dep_ not in ("aux", "auxpass")),
    }
    for u in _LU_UNITS:
        f[f"lu.{u}"] = float(units[u])
    for name, a, b in _LU_RATIOS:
        f[f"lu.{name}"] = _ratio(units[a], units[b])
    # dependency distances and balance (§3.2.2)
    dists = [abs(t.i - t.head.i) for t in toks if t.dep_ != "ROOT" and not t.is_punct]
    f["dep.max_distance"] = float(max(dists, default=0))
    f["dep.mean_distance"] = float(np.mean(dists)) if dists else 0.0
    f["dep.long_range"] = float(sum(d > 5 for d in dists))
    f["dep.long_range_ratio"] = _ratio(f["dep.long_range"], len(dists))
    root_sizes = [len(list(c.subtree)) for r in roots for c in r.children if not c.is_punct]
    f["dep.root_children"] = float(len(root_sizes))
    f["dep.imbalance_std"] = float(np.std(root_sizes)) if root_sizes else 0.0
    f["dep.imbalance_max"] = _ratio(max(root_sizes, default=0), len(toks))
    rel = Counter(t.dep_ for t in toks)
    for r in RELATIONS:
        f[f"rel.{r}"] = float(rel.get(r, 0))
    # tree shape (§3.2.4)
    depth: dict[int, int] = {}
    for t in toks:
        d, h = 0, t
        while h.dep_ != "ROOT" and h.head.i != h.i and d < len(toks):
            h, d = h.head, d + 1
        depth[t.i] = d
    width = Counter(depth.values())
    n_children = [sum(1 for _ in t.children) for t in toks]
    inner = [c for c in n_children if c > 0]
    f["tree.max_depth"] = float(max(depth.values(), default=0))
    f["tree.mean_depth"] = float(np.mean(list(depth.values()))) if depth else 0.0
    f["tree.max_width"] = float(max(width.values(), default=0))
    f["tree.leaves"] = float(sum(1 for c in n_children if c == 0))
    f["tree.leaf_ratio"] = _ratio(f["tree.leaves"], len(inner))
    f["tree.mean_branching"] = float(np.mean(inner)) if inner else 0.0
    f["tree.max_branching"] = float(max(inner, default=0))
    f["tree.depth_width_ratio"] = _ratio(f["tree.max_depth"], f["tree.max_width"])
    # entities, roles, lexis (§3.2.3)
    ents = list(doc.ents)
    etypes = Counter(e.label_ for e in ents)
    f["ent.count"] = float(len(ents))
    f["ent.density"] = _ratio(len(ents), len(words))
    f["ent.types"] = float(len(etypes))
    f["ent.tokens"] = float(sum(len(e) for e in ents))
    for label in ENTITY_TYPES:
        f[f"ent.{label}"] = float(etypes.get(label, 0))
    f["role.agents"] = float(rel.get("nsubj", 0) + rel.get("agent", 0))
    f["role.patients"] = float(rel.get("dobj", 0) + rel.get("nsubjpass", 0))
    f["role.temporal"] = float(etypes.get("DATE", 0) + etypes.get("TIME", 0) + rel.get("npadvmod", 0))
    f["role.locative"] = float(
        etypes.get("GPE", 0) + etypes.get("LOC", 0) + etypes.get("FAC", 0)
        + sum(1 for t in toks if t.dep_ == "prep" and t.lower_ in ("in", "at", "on", "near", "from"))
    )  # fmt: skip
    lower = [t.lower_ for t in words]
    content = sum(1 for t in words if t.tag_.startswith(_CONTENT_PREFIX))
    f["lex.tokens"] = float(len(words))
    f["lex.chars"] = float(len(doc.text))
    f["lex.mean_word_len"] = float(np.mean([len(t.text) for t in words])) if words else 0.0
    f["lex.type_token_ratio"] = _ratio(len(set(lower)), len(lower))
    f["lex.content_ratio"] = _ratio(content, len(words))
    f["lex.content_function_ratio"] = _ratio(content, len(words) - content)
    f["lex.nouns"] = float(sum(1 for t in words if t.tag_ in ("NN", "NNS")))
    f["lex.proper_nouns"] = float(sum(1 for t in words if t.tag_ in ("NNP", "NNPS")))
    f["lex.verbs"] = float(sum(1 for t in words if t.tag_.startswith("VB")))
    f["lex.adjectives"] = float(sum(1 for t in words if t.tag_.startswith("JJ")))
    f["lex.numbers"] = float(sum(1 for t in words if t.tag_ == "CD"))
    f["lex.possessives"] = float(sum(1 for t in toks if t.tag_ == "POS" or t.dep_ == "poss"))
    f["lex.prepositions"] = float(sum(1 for t in words if t.tag_ == "IN"))
    f["lex.capitalized"] = float(sum(1 for t in words[1:] if t.text[:1].isupper()))
    qtype = _question_type(doc)
    for q in QUESTION_TYPES:
        f[f"qtype.{q}"] = 1.0 if q == qtype else 0.0
    f["mark.coordination"] = float(rel.get("cc", 0) + rel.get("conj", 0))
    f["mark.subordination"] = float(rel.get("mark", 0) + len(dep_clauses))
    f["mark.negation"] = float(rel.get("neg", 0) + sum(1 for w in lower if w in _NEGATIONS))
    f["mark.passive"] = float(rel.get("nsubjpass", 0) + rel.get("auxpass", 0))
    f["mark.comparative"] = float(sum(1 for t in words if t.tag_ in _COMPARATIVE))
    f["mark.wh_words"] = float(sum(1 for t in words if t.tag_ in ("WDT", "WP", "WP$", "WRB")))
    f["mark.and_or"] = float(sum(1 for w in lower if w in ("and", "or", "both", "either")))
    # interactions (§3.2.4)
    connectors = rel.get("cc", 0) + rel.get("mark", 0)
    chain, longest = 0, 0
    for t in toks:  # "X's Y's Z": nested possessives are hops spelled in one noun phrase
        chain = chain + 1 if t.tag_ == "POS" or t.dep_ == "poss" else chain
        if t.tag_ in _NOUN_TAGS and t.dep_ != "poss" and t.dep_ != "compound":
            longest, chain = max(longest, chain), 0
    f["int.tokens_per_clause"] = _ratio(len(words), max(units["C"], 1))
    f["int.entities_per_token"] = f["ent.density"]
    f["int.depth_per_token"] = _ratio(f["tree.max_depth"], len(words))
    f["int.connectors_per_clause"] = _ratio(connectors, max(units["C"], 1))
    f["int.prepositions_per_token"] = _ratio(f["lex.prepositions"], len(words))
    f["int.nouns_per_verb"] = _ratio(f["lex.nouns"] + f["lex.proper_nouns"], max(f["lex.verbs"], 1.0))
    f["int.entities_x_depth"] = f["ent.count"] * f["tree.max_depth"]
    f["int.possessive_chain"] = float(max(longest, chain))
    return np.fromiter((f[n] for n in FEATURE_NAMES), dtype=np.float64, count=len(FEATURE_NAMES))


class Featurizer:
    """phi(q): one spaCy parse of the question -> :data:`FEATURE_NAMES` (EA-GraphRAG §3.2).

    The pipeline (``en_core_web_sm``: tok2vec, tagger, parser, NER) loads on first use
    and is shared by every featurizer in the process.
    """

    _lock = threading.Lock()
    _nlp: Language | None = None

    names: tuple[str, ...] = FEATURE_NAMES
    version: int = FEATURIZER_VERSION

    @classmethod
    def pipeline(cls) -> Language:
        with cls._lock:
            if cls._nlp is None:
                cls._nlp = load_spacy(
                    "the router", MODEL, exclude=["lemmatizer", "senter", "attribute_ruler"]
                )
            return cls._nlp

    def parse(self, question: str) -> Doc:
        return self.pipeline()(question)

    def __call__(self, question: str) -> np.ndarray:
        """Raw features of one question (float64, length ``len(FEATURE_NAMES)``)."""
        return features(self.parse(question))

    def many(self, questions: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Raw features of many questions, one row each (parsed with ``nlp.pipe``)."""
        out = np.zeros((len(questions), len(FEATURE_NAMES)), dtype=np.float64)
        for i, doc in enumerate(self.pipeline().pipe(list(questions), batch_size=batch_size)):
            out[i] = features(doc)
        return out


def describe(question: str) -> dict[str, Any]:
    """Named raw features of ``question`` (for inspection and the docs)."""
    return dict(zip(FEATURE_NAMES, Featurizer()(question).tolist(), strict=True))


__all__ = [
    "ENTITY_TYPES",
    "FEATURE_NAMES",
    "QUESTION_TYPES",
    "RELATIONS",
    "Featurizer",
    "describe",
    "features",
]
