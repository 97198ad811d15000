"""Files in, chunks out: reading files (:mod:`.files`), chunking (:mod:`.chunking`) and what
one ``index`` run adds, replaces and prunes (:mod:`.updates`). The first stage of the data flow;
it imports nothing of the stages after it."""
