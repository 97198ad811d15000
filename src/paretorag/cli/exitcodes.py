"""The exit status of every ``paretorag`` command, in one place (documented in docs/exit-codes.md).

A script can tell "done" from "done, but some files were left out" from "nothing was done":

====  ===========  ==================================================================
code  name         meaning
====  ===========  ==================================================================
0     OK           done (files of other types met while walking a folder are skipped
                   and counted: still 0)
1     FAILED       the command ran and found a failure it reports: ``inspect --check``
                   found a problem, a ``chat`` question failed
2     ERROR        nothing was done: a usage error (typer's: unknown option, missing
                   argument) or a paretorag error (bad argument, unreadable input,
                   locked index with ``--no-wait``, damaged index, ``--strict`` stopped at
                   a bad file); the message on stderr names the cause and the fix
3     PARTIAL      ``index`` / ``insert`` committed the readable files, but some files
                   of a supported type (or named on the command line) could not be read;
                   they are listed on stderr
130   INTERRUPTED  stopped by Ctrl-C (SIGINT), as a shell reports it; what was kept is said
143   TERMINATED   stopped by SIGTERM (``kill``, a service manager, a container stop), with
                   the clean-up of Ctrl-C; ``paretorag: stopped (SIGTERM)`` on stderr
                   (``serve`` and ``mcp`` keep their own shutdown)
====  ===========  ==================================================================
"""

from __future__ import annotations

OK = 0
FAILED = 1
ERROR = 2
PARTIAL = 3
INTERRUPTED = 130
TERMINATED = 143  # 128 + SIGTERM, as a shell reports a process that SIGTERM ended

CODES: dict[int, str] = {
    OK: "done",
    FAILED: "a check or a question failed (inspect --check, chat)",
    ERROR: "nothing done: usage error or paretorag error (message on stderr)",
    PARTIAL: "index/insert committed the readable files; some files could not be read (listed)",
    INTERRUPTED: "interrupted (Ctrl-C)",
    TERMINATED: "stopped by SIGTERM (as Ctrl-C, what was kept is said)",
}
