"""The index on disk: SQLite documents and chunks (:mod:`.store`), the manifest that is the commit
point (:mod:`.manifest`), vectors and their faiss index (:mod:`.vectors`), built structures
(:mod:`.structures`), the writer lock and reader leases (:mod:`.lock`), job records (:mod:`.jobs`)
and disk errors in plain words (:mod:`.diskerrors`)."""
