"""Questions in, scored passages out: the state operators share (:mod:`.query`), the registered
operators (:mod:`.operators`), the methods composed of them (:mod:`.methods`), the learned
router (:mod:`.router`) and ranker (:mod:`.ranking`), and the catalogue of what is registered
(:mod:`.catalog`)."""
