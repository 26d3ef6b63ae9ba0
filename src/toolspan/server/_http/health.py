"""The store's counts that ``GET /healthz`` shows, counted once for every caller that can share the count
(``StoreCounts``).

Counting reads every row: SQLite's ``count(*)`` walks the whole index of spans (61 ms at 2,000,000 spans,
and in proportion beyond), and ``/healthz`` answers without a token, as a liveness probe's route does. So
probes, however many, must not each pay for a scan:

- a caller that arrives while a count runs waits for it, and counts again only if that count began before
  a write the caller must see;
- a count is reused while this process has committed no write since it began (``Storage.writes``) and it
  began under ``max_age_s`` ago (a shared PostgreSQL's other replicas write too: their rows show within
  that);
- a count begins no sooner after the one before than ``spacing`` times that one's duration, so counting
  takes at most about ``1 / spacing`` of one thread of the pool, never more than one.

Every answer holds every write this process committed before the request came.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Final

from starlette.concurrency import run_in_threadpool

from toolspan.server._store.api import StoreApi

__all__ = ["MAX_AGE_S", "SPACING", "StoreCounts"]

MAX_AGE_S: Final = 1.0
SPACING: Final = 10.0


@dataclass(frozen=True, slots=True)
class _Count:
    writes: int  # ``Storage.writes`` when it began
    began: float  # ``time.monotonic()`` when it began
    counts: dict[str, int]


class StoreCounts:
    """The spans, traces and log records ``store`` holds, as ``/healthz`` shows them (see the module)."""

    def __init__(self, store: StoreApi, max_age_s: float = MAX_AGE_S, spacing: float = SPACING) -> None:
        self._store = store
        self._max_age_s = max_age_s
        self._spacing = spacing
        self._last: _Count | None = None
        self._running: asyncio.Future[None] | None = None
        self._not_before = 0.0
        self.scans = 0  # counts made (``/healthz`` shows it)

    async def get(self) -> dict[str, int]:
        """The counts, holding every write this process committed before the call."""
        writes, now = self._store.writes, time.monotonic()
        while True:
            last = self._last
            if last is not None and last.writes >= writes and now - last.began <= self._max_age_s:
                return dict(last.counts)
            if self._running is None:
                self._running = asyncio.ensure_future(self._count())
                # (Its failure is each waiter's to raise; with none left, it is not reported unread.)
                self._running.add_done_callback(_read_outcome)
            # Shared: a caller that goes away (its client closed) does not cancel the others' count.
            await asyncio.shield(self._running)

    async def _count(self) -> None:
        try:
            wait = self._not_before - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writes, began = self._store.writes, time.monotonic()
            counts = await run_in_threadpool(self._read)
            ended = time.monotonic()
            self.scans += 1
            self._last = _Count(writes, began, counts)
            self._not_before = ended + self._spacing * (ended - began)
        finally:
            self._running = None

    def _read(self) -> dict[str, int]:
        counts = self._store.counts()
        counts["log_records"] = self._store.log_count()
        return counts


def _read_outcome(done: asyncio.Future[None]) -> None:
    if not done.cancelled():
        done.exception()
