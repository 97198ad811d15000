"""Questions asked at the same time are embedded in one batch (dynamic batching).

A server answering many clients embeds one question per request. One forward pass over a
batch of short questions costs far less than one pass each (a 20-token question leaves most
of a matrix kernel idle, and every pass pays the runtime's fixed cost), so
:class:`QueryCoalescer` gathers the questions that arrive while a pass runs and embeds them
together in the next one.

Leader/follower: the first asker runs a pass; questions that arrive meanwhile wait. When
its pass is done and questions wait, the leader hands the lead to the oldest of them, which
embeds every waiting question (at most ``max_batch``) in the next pass. A question asked alone is embedded at once, as before: nothing waits for a timer.

Vectors of a batched pass equal the single-question ones up to float rounding (padding is
masked and left out of the mean pooling), so a question's ranking does not depend on who
else asked at the time, except for ties within about 1e-6.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]


@dataclass(eq=False)
class _Ask:
    text: str
    ready: threading.Event
    vector: F32 | None = None
    error: BaseException | None = None
    lead: bool = False


class QueryCoalescer:
    """Embeds concurrent single questions in shared batches (see the module docstring).

    Parameters
    ----------
    embed : callable
        ``embed(texts) -> (len(texts), dim)`` array, e.g. an :class:`~paretorag.providers.base.Embedder`'s.
    max_batch : int
        Most questions in one pass (32).
    """

    def __init__(self, embed: Callable[[list[str]], npt.NDArray[np.floating]], max_batch: int = 32) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self._embed = embed
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._waiting: list[_Ask] = []
        self._busy = False
        self.passes = 0  # forward passes run (a test and the server's metrics read it)
        self.asked = 0

    def embed_one(self, text: str) -> F32:
        """The vector of one question, embedded with whatever others are asked meanwhile."""
        ask = _Ask(text, threading.Event())
        with self._lock:
            self._waiting.append(ask)
            self.asked += 1
            if not self._busy:
                self._busy = ask.lead = True
        if not ask.lead:
            ask.ready.wait()  # done by a leader, or made the leader
        if ask.lead:
            self._lead(ask)
        if ask.error is not None:
            raise ask.error
        assert ask.vector is not None  # set by the pass that took it, or error set
        return ask.vector

    def _lead(self, own: _Ask) -> None:
        # a new leader's question is the oldest waiting one (no pass was running, or it
        # was handed the lead as the oldest), so this one pass answers it
        try:
            with self._lock:
                batch = self._waiting[: self.max_batch]
                del self._waiting[: self.max_batch]
                self.passes += 1
            done = False
            try:
                vectors = np.asarray(self._embed([a.text for a in batch]), dtype=np.float32)
                for a, v in zip(batch, vectors, strict=True):
                    a.vector = v
                done = True
            finally:
                if not done:  # the error goes on up here, and every other asker raises it too
                    for a in batch:
                        a.error = sys.exc_info()[1]
                for a in batch:
                    if a is not own:
                        a.ready.set()
        finally:
            with self._lock:
                if self._waiting:  # hand the lead to the oldest waiting question
                    nxt = self._waiting[0]
                    nxt.lead = True
                    nxt.ready.set()
                else:
                    self._busy = False
