"""Writing an index directory, one module per job (orchestrated by :mod:`paretorag.indexing.writer`).

- :mod:`.plan`: what to build (structures the methods need, their file names, spans to pool);
- :mod:`.embed_cache`: the embedding cache, every text embedded at most once;
- :mod:`.build`: chunking and storing documents, running the structure builders;
- :mod:`.commit`: the vector files and the atomic manifest swap;
- :mod:`.loaded`: the committed index as methods read it.
"""
