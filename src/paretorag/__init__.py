"""paretorag: cheap, good graph-based retrieval-augmented generation.

The public API is this flat namespace (guarded by ``tests/test_public_api.py``).
"""

from __future__ import annotations

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
from .methods.base import Method, QueryOptions, Retrieval, available_methods, get_method, register
from .providers.base import Completion, Message, Request, Task
from .providers.embedders import HashEmbedder, SentenceTransformerEmbedder
from .providers.llm import ExtractiveLLM, FakeLLM, OpenAILLM
from .providers.onnx_embedder import OnnxEmbedder
from .rag import RAG, IndexReport
from .types import Answer, Budget, Chunk, Citation, ContextItem, Document, Scored, Usage

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
    "ParetoragError",
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
