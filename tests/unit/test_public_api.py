"""Guard the flat public namespace."""

from __future__ import annotations

import paretorag


def test_public_names_are_stable():
    expected = {
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
    }
    assert set(paretorag.__all__) == expected
    for name in paretorag.__all__:
        assert hasattr(paretorag, name)


def test_every_error_derives_from_one_base():
    for name in paretorag.__all__:
        obj = getattr(paretorag, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, paretorag.ParetoragError)
