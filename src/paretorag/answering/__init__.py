"""Passages in, an answer with citations out: context packing (:mod:`.context`), generation with
citations (:mod:`.answer`), map-reduce over many items (:mod:`.mapreduce`) and the offline
reader (:mod:`.reader`)."""
