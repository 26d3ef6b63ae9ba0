"""Renderings of stored traces kept for the next read (``Renders``): the bytes of a trace's view (its tree,
events, page data, OTLP JSON, ...) kept under the trace's *version* (``StoreApi.trace_version``: it changes
whenever the trace's spans or log records do, on this replica or, on a shared PostgreSQL store, any other), so
reading a trace again that has not changed costs one small query instead of reading and re-deriving every
span. A trace read from Tempo or Jaeger (not held here) is never kept. Only the renderings of traces of at
least ``min_spans`` spans are kept: a smaller trace is made again in about what its look-up saves (a trace of
13 agent spans: 0.3 ms for its OTLP JSON, 0.75 ms for its tree), and a client reading many small traces once
(checking an export trace by trace) would otherwise fill the bound with them, pushing out the renderings of
the large traces, which are worth keeping. Bounded by bytes, least recently read first out; thread-safe
(renderings are made in the thread pool). ``routes.traces.rendered`` reads through it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

__all__ = ["Renders", "Version"]

Version = tuple[int, ...]


class Renders:
    """Rendered bytes per ``(trace id, what)``, each under the trace's version; at most ``max_bytes`` in
    all (0: none kept), of traces of at least ``min_spans`` spans. ``hits``, ``misses`` and ``size`` are
    what ``/healthz`` shows."""

    def __init__(self, max_bytes: int, min_spans: int) -> None:
        self.max_bytes = max_bytes
        self.min_spans = min_spans
        self.size = 0
        self.hits = 0
        self.misses = 0
        self._kept: OrderedDict[tuple[str, Hashable], tuple[Version, bytes]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, Hashable], version: Version) -> bytes | None:
        """The bytes kept for ``key`` if made from this ``version`` of the trace."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is None or kept[0] != version:
                self.misses += 1
                return None
            self._kept.move_to_end(key)
            self.hits += 1
            return kept[1]

    def put(self, key: tuple[str, Hashable], version: Version, body: bytes, spans: int) -> None:
        """Keep ``body``, made of ``spans`` spans, for ``key`` (replacing an older version's) if the trace is
        large enough; the least recently read go first."""
        if len(body) > self.max_bytes or spans < self.min_spans:
            return
        with self._lock:
            old = self._kept.pop(key, None)
            if old is not None:
                self.size -= len(old[1])
            self._kept[key] = (version, body)
            self.size += len(body)
            while self.size > self.max_bytes:
                _, (_, dropped) = self._kept.popitem(last=False)
                self.size -= len(dropped)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"kept": len(self._kept), "bytes": self.size, "hits": self.hits, "misses": self.misses}
