"""paretorag: cheap, good graph-based retrieval-augmented generation.

The public API is this flat namespace (guarded by ``tests/unit/test_public_api.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    ConfigError,
    DamagedIndexError,
    IndexFormatError,
    IndexLockedError,
    InputError,
    LLMError,
    MissingDependencyError,
    MissingStructureError,
    ParetoragError,
    ProviderError,
    QuestionError,
    StorageError,
)

if TYPE_CHECKING:
    from .providers.base import Completion, Message, Request, Task
    from .providers.embedders import HashEmbedder, SentenceTransformerEmbedder
    from .providers.llm import ExtractiveLLM, FakeLLM, OpenAILLM
    from .providers.onnx_embedder import OnnxEmbedder
    from .rag import RAG, IndexReport
    from .retrieval.methods.base import (
        Method,
        QueryOptions,
        Retrieval,
        available_methods,
        get_method,
        register,
    )
    from .retrieval.methods.pipeline import Pipeline
    from .retrieval.operators.base import Operator
    from .types import Answer, Budget, Chunk, Citation, ContextItem, Document, Scored, Usage

# the rest of the namespace is imported on first use, so that `paretorag --help` loads no
# numpy, scipy or model library (PEP 562)
_LAZY = {
    "Method": ".retrieval.methods.base",
    "QueryOptions": ".retrieval.methods.base",
    "Retrieval": ".retrieval.methods.base",
    "available_methods": ".retrieval.methods.base",
    "get_method": ".retrieval.methods.base",
    "register": ".retrieval.methods.base",
    "Pipeline": ".retrieval.methods.pipeline",
    "Operator": ".retrieval.operators.base",
    "Completion": ".providers.base",
    "Message": ".providers.base",
    "Request": ".providers.base",
    "Task": ".providers.base",
    "HashEmbedder": ".providers.embedders",
    "SentenceTransformerEmbedder": ".providers.embedders",
    "ExtractiveLLM": ".providers.llm",
    "FakeLLM": ".providers.llm",
    "OpenAILLM": ".providers.llm",
    "OnnxEmbedder": ".providers.onnx_embedder",
    "IndexReport": ".rag",
    "RAG": ".rag",
    "Answer": ".types",
    "Budget": ".types",
    "Chunk": ".types",
    "Citation": ".types",
    "ContextItem": ".types",
    "Document": ".types",
    "Scored": ".types",
    "Usage": ".types",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'paretorag' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = [
    "RAG",
    "Answer",
    "Budget",
    "Chunk",
    "Citation",
    "Completion",
    "ConfigError",
    "ContextItem",
    "DamagedIndexError",
    "Document",
    "ExtractiveLLM",
    "FakeLLM",
    "HashEmbedder",
    "IndexFormatError",
    "IndexLockedError",
    "IndexReport",
    "InputError",
    "LLMError",
    "Message",
    "Method",
    "MissingDependencyError",
    "MissingStructureError",
    "OnnxEmbedder",
    "OpenAILLM",
    "Operator",
    "ParetoragError",
    "Pipeline",
    "ProviderError",
    "QueryOptions",
    "QuestionError",
    "Request",
    "Retrieval",
    "Scored",
    "SentenceTransformerEmbedder",
    "StorageError",
    "Task",
    "Usage",
    "__version__",
    "available_methods",
    "get_method",
    "register",
]
