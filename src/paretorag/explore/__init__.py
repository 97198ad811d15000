"""The index's graphs for people: listing, search and subgraphs (:mod:`.browse`), export as
GraphML, JSON or CSV (:mod:`.export`), and the sentences that name an entity (:mod:`.mentions`)."""
