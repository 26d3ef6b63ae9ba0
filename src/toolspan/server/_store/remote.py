"""Traces this replica does not hold, read from Tempo (``/api/v2/traces/{id}``) or Jaeger
(``/api/v3/traces/{id}``) with the clients of ``toolspan.backends`` (the ones ``toolspan fetch`` uses), and
the spans of a trace from wherever they are (``TraceSource``: the store first)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable

from starlette.concurrency import run_in_threadpool

from toolspan.backends import Backend, BackendError, Jaeger, Tempo
from toolspan.bridge.internal import attach_logs
from toolspan.bridge.model import Span
from toolspan.errors import ToolspanError
from toolspan.server._store.api import StoreApi

__all__ = ["Remote", "RemoteError", "TraceSource", "fetch_remote"]

_logger = logging.getLogger(__name__)

# Reads one trace from Tempo or Jaeger (``None``: neither has it, or neither answered).
Remote = Callable[[], Awaitable[list[Span] | None]]


class RemoteError(ToolspanError):
    """A backend answered with an error or something the bridge cannot read."""


def fetch_remote(
    trace_id: str, tempo_url: str | None, jaeger_url: str | None, timeout_s: float
) -> list[Span] | None:
    """The spans of ``trace_id`` from the first backend that has it (Tempo first), or ``None`` when none
    has it; ``RemoteError`` (one line per backend that failed) when none has it and one failed. Each answer
    comes whole within ``timeout_s`` (connecting, headers, body, redirects), so a backend that trickles holds
    a worker thread this long at most."""
    failed: list[str] = []
    try:
        backends: list[Backend] = []
        if tempo_url:
            backends.append(Tempo(tempo_url, timeout_s=timeout_s))
        if jaeger_url:
            backends.append(Jaeger(jaeger_url, timeout_s=timeout_s))
    except ValueError as e:
        raise RemoteError(str(e)) from None
    for backend in backends:
        try:
            spans = backend.trace_spans(trace_id)
        except (BackendError, ValueError) as e:
            failed.append(f"{backend.kind}: {e}")
            continue
        if spans:
            return spans
    if failed:
        raise RemoteError("; ".join(failed))
    return None


class TraceSource:
    """The spans of a trace: from the store, else from Tempo/Jaeger when configured (with the log records the
    store holds of it joined), each answer of theirs whole within ``timeout_s``."""

    def __init__(
        self,
        store: StoreApi,
        tempo_url: str | None,
        jaeger_url: str | None,
        timeout_s: float,
    ) -> None:
        self._store = store
        self._tempo_url = tempo_url
        self._jaeger_url = jaeger_url
        self._timeout_s = timeout_s

    async def spans(self, trace_id: str) -> list[Span] | None:
        """The trace's spans, ``None`` when neither the store nor a backend holds it; ``RemoteError`` when a
        backend failed (unreachable, too slow, an answer too large or unreadable) and none had it."""
        spans = await run_in_threadpool(self._store.trace_spans, trace_id)
        return spans if spans else await self.elsewhere(trace_id)

    async def elsewhere(self, trace_id: str) -> list[Span] | None:
        """The trace's spans from Tempo or Jaeger when the server names one (``None`` otherwise, or when
        neither has it), for a reader that found none in the store; ``RemoteError`` as ``spans``."""
        if not (self._tempo_url or self._jaeger_url):
            return None
        remote = await run_in_threadpool(
            fetch_remote, trace_id, self._tempo_url, self._jaeger_url, self._timeout_s
        )
        if not remote:
            return None
        logs = await run_in_threadpool(self._store.trace_logs, trace_id)
        return attach_logs(remote, logs)[0] if logs else remote

    async def _polled(self, trace_id: str) -> list[Span] | None:
        """``spans`` for a stream polling a trace: a backend's failure is logged, and the stream polls on."""
        try:
            return await self.spans(trace_id)
        except RemoteError as e:
            _logger.warning("toolspan serve: trace %s: %s", trace_id, e)
            return None

    def remote(self, trace_id: str) -> Remote | None:
        """Reads the trace from Tempo/Jaeger when configured (for streams of traces not held here)."""
        if self._tempo_url or self._jaeger_url:
            return functools.partial(self._polled, trace_id)
        return None
