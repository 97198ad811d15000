"""The operator contract (unified framework §6.1-6.2) and the operator registry.

Every retrieval operator is called the same way::

    scored = op(index, state)          # -> Scored, also stored in state.results[op.produces]

Settings are keyword-only ``__init__`` parameters, stored unchanged and validated on
first use (scikit-learn's convention, :class:`paretorag.params.Params`). Each operator
class declares

- ``name``: its registry name, ``"<kind>.<operator>"`` as in Table 3 (``"node.ppr"``);
- ``kind``: the Table 3 column (node, relationship, chunk, subgraph, community) or the
  paper's own family (``e2graphrag``, ``g2cons``);
- ``produces``: the result key it writes (``"entity"``, ``"relation"``, ``"chunk"``...);
- ``consumes``: result keys it reads (earlier steps must produce them);
- ``structures``: the index structures it always reads (``requires`` adds the
  ``graph`` setting of operators that work on any graph);
- ``uses_llm``: whether it calls the LLM (checked by the conformance suite);
- ``generative_only``: whether it needs an LLM that follows instructions (the Agent
  operators; the extractive backend is refused, and a method using one fails at
  ``index`` already);
- ``paper``: where it is specified.

Results, by the key an operator ``produces`` (rows of the ``graph`` setting's structure):

- ``"terms"``: positions in ``state.terms`` (question conversion, §6.3; LightRAG's
  high-level keywords go to ``state.info["keywords"]``);
- ``"entity"``: node rows (kind ``"entity"``; passage-graph and tree nodes too);
- ``"relation"``: edge-record rows, ``Graph.edges`` (kind ``"relation"``);
- ``"chunk"``: chunk-table rows; a chunk operator sets nothing else;
- ``"subgraph"``: edge-record rows of the paths or tree found; the paths (node rows)
  go to ``state.info["paths"]`` and their texts to ``state.items`` (``path:N``);
- ``"community"``: community rows, ``Graph.communities``; the reports go to
  ``state.items`` (``community:ROW``).

Items are appended within the query's token budget. Seeds are read from the result
named by a ``source`` setting (default: the first of ``consumes``). Operators that ask
an LLM to choose (Agent) refuse the extractive backend with an error naming
``--llm openai:MODEL``; LLM replies are parsed for numbers, never evaluated.

Register a class with :func:`register_operator`; list them with
:func:`available_operators`. Modules are loaded in one place
(:data:`paretorag.retrieval.operators._MODULES`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ...errors import ConfigError
from ...graphs.graph import Graph, graph_from_structure
from ...params import Params, check_fraction, check_k, check_nonneg_int, check_positive_int
from ...types import Scored
from ..query import State

if TYPE_CHECKING:
    from ..query import IndexView


def load_graph(index: IndexView, name: str) -> Graph:
    """The :class:`~paretorag.graphs.graph.Graph` of structure ``name``, loaded once per index."""
    graph: Graph = index.cached(f"graph:{name}", lambda: graph_from_structure(index.structure(name)))
    return graph


class Operator(Params):
    """Base class of retrieval operators (see the module docstring)."""

    name: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    produces: ClassVar[str] = ""
    consumes: ClassVar[tuple[str, ...]] = ()
    structures: ClassVar[tuple[str, ...]] = ()
    uses_llm: ClassVar[bool] = False
    generative_only: ClassVar[bool] = False
    paper: ClassVar[str] = ""

    @property
    def requires(self) -> tuple[str, ...]:
        """Structures read: the fixed ``structures`` plus the ``graph`` setting, if any."""
        graph = getattr(self, "graph", None)
        extra = (graph,) if isinstance(graph, str) and graph else ()
        return tuple(dict.fromkeys((*self.structures, *extra)))

    def __call__(self, index: IndexView, state: State) -> Scored:
        """Run on ``state``, store the result under ``produces`` and return it."""
        return state.put(self.produces, self.run(index, state))

    def run(self, index: IndexView, state: State) -> Scored:
        raise NotImplementedError

    def parts(self) -> list[Operator]:
        """Registered operators this one runs inside it (a beam search's prunings), for Table 3."""
        return []

    def describe(self) -> dict[str, Any]:
        """What ``paretorag operators`` prints."""
        return {
            "name": self.name,
            "kind": self.kind,
            "produces": self.produces,
            "consumes": list(self.consumes),
            "requires": list(self.requires),
            "uses_llm": self.uses_llm,
            "generative_only": self.generative_only,
            "paper": self.paper,
            "params": {k: v for k, v in self.get_params(deep=False).items()},
        }


class GraphOperator(Operator):
    """An operator over one stored graph: the opening every such operator shares.

    It loads the graph named by the ``graph`` setting (once per index) and checks ``k``
    (a positive integer; or ``None`` for all when :attr:`all_k`), then calls
    :meth:`search` with both.
    """

    all_k: ClassVar[bool] = False  # ``k=None`` keeps every result

    graph: str
    k: int | None

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_k(self, "k", self.k) if self.all_k else check_positive_int(self, "k", self.k)
        return self.search(index, state, load_graph(index, self.graph), k)

    def search(self, index: IndexView, state: State, graph: Graph, k: Any) -> Scored:
        """The operator's own work on the loaded ``graph`` with the checked ``k``."""
        raise NotImplementedError


OPERATORS: dict[str, type[Operator]] = {}


def register_operator(cls: type[Operator]) -> type[Operator]:
    """Class decorator adding an operator to the registry under ``cls.name``."""
    if not cls.name or not cls.produces:
        raise ConfigError(f"operator {cls.__name__} needs a name and what it produces")
    OPERATORS[cls.name] = cls
    return cls


def operator_class(name: str) -> type[Operator]:
    from . import load_operators

    load_operators()
    try:
        return OPERATORS[name]
    except KeyError:
        raise ConfigError(f"unknown operator {name!r}; available: {', '.join(sorted(OPERATORS))}") from None


def get_operator(name: str, **params: Any) -> Operator:
    """A fresh operator by registered name, with ``params`` set."""
    return operator_class(name)().set_params(**params)


def available_operators() -> list[str]:
    from . import load_operators

    load_operators()
    return sorted(OPERATORS)


__all__ = [
    "OPERATORS",
    "GraphOperator",
    "Operator",
    "Params",
    "available_operators",
    "check_fraction",
    "check_k",
    "check_nonneg_int",
    "check_positive_int",
    "get_operator",
    "load_graph",
    "operator_class",
    "register_operator",
]
