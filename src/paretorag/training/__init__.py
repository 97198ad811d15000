"""Training code (the reader's ranker, the fusion ranker, EA-GraphRAG's router); nothing at query time imports this package."""
