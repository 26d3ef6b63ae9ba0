"""What the routes of one server share (``ServerState``): its settings and its store, where a trace's spans
are read from and the renderings of them kept for the next read, the streams' wake-ups and text deltas, the
control channel's wake-ups, the parse workers, the wrong tokens per client address, and the counters
``/healthz`` shows. It is also where exports land, from OTLP/HTTP and OTLP/gRPC alike (``ingest_rows``,
``ingest_logs``): stored, then the streams they concern woken."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping, Sequence

from toolspan.bridge.internal import LogRecord
from toolspan.server._http.auth import FailureThrottle
from toolspan.server._http.config import ServerConfig
from toolspan.server._http.health import StoreCounts
from toolspan.server._http.renders import Renders
from toolspan.server._ingest.otlp import split_valid
from toolspan.server._ingest.parsers import Parsers
from toolspan.server._rows.spans import IngestResult, Row
from toolspan.server._store.api import StoreApi
from toolspan.server._store.remote import TraceSource
from toolspan.server._store.writes import Prepared
from toolspan.server._streams.deltas import DeltaHub, split_deltas
from toolspan.server._streams.page import PageDocs
from toolspan.server._streams.sse import EventStreamResponse
from toolspan.server._streams.wakeups import Changes, Notifier

__all__ = ["ServerState"]

_logger = logging.getLogger(__name__)


class ServerState:
    """The state of one server (see the module's documentation); built by ``build_app``."""

    def __init__(self, config: ServerConfig, store: StoreApi) -> None:
        self.config = config
        self.store = store
        self.traces = TraceSource(store, config.tempo_url, config.jaeger_url, config.backend_timeout_s)
        # The views of stored traces, kept for the next read of a trace that has not changed.
        self.renders = Renders(config.render_cache_bytes, config.render_min_spans)
        self.counts = StoreCounts(store)  # what /healthz shows of the store, counted once for many probes
        self.notifier = Notifier()  # streams, after a commit
        self.pages = PageDocs()  # the live pages' documents, built once per version of a trace
        self.decisions = Changes()  # the control channel's long polls, after a decision or cancel request
        self.deltas = DeltaHub(config.delta_buffer, self._drop)
        self.parsers = Parsers(config.parse_workers)
        # Wrong bearer tokens per client address (``BearerAuth`` answers 429 past the limit).
        self.auth_failures = FailureThrottle(config.auth_failures, config.auth_window_s)
        self.loop: asyncio.AbstractEventLoop | None = None
        # Set when the server shuts down: every stream ends its response then (``end_streams``).
        self.ending: asyncio.Event | None = None
        self.streams = 0
        self.dropped_clients = 0

    async def start(self) -> None:
        """On the event loop, before the server answers: watch the store, start the parse workers."""
        self.loop = asyncio.get_running_loop()
        self.ending = asyncio.Event()
        self._watch_store()
        await self.parsers.start()

    def stop(self) -> None:
        """After the server stopped answering (any thread): no more wake-ups, the parse workers exit."""
        self.loop = None
        self.parsers.close()

    def end_streams(self) -> None:
        """End every open stream, on the event loop (the server is shutting down)."""
        if self.ending is not None:
            self.ending.set()

    def _watch_store(self) -> None:
        """Wake the streams on commits of other replicas, and relay their text deltas (a store shared by
        replicas calls back from a thread of its own; a store of one process never does)."""
        loop = self.loop
        if loop is None:
            return

        def committed(traces: Sequence[str] | None = None, conversations: Sequence[str] = ()) -> None:
            # Another replica's commit: the traces it wrote, when its notification could say (else all).
            self._wake(loop, None if traces is None else set(traces), set(conversations))

        def relayed(records: list[LogRecord]) -> None:
            if not loop.is_closed():
                self.deltas.relay(loop, records, self.store.trace_row)

        def decided() -> None:  # a decision or cancel request stored by another replica
            if not loop.is_closed():
                loop.call_soon_threadsafe(self.decisions.notify)

        self.store.changes.watch(committed, relayed, decided)

    # --- where exports land (any thread) ---------------------------------------------------------------

    def ingest_rows(self, rows: list[Row]) -> IngestResult:
        """Store span rows and wake the streams they concern; returns the counts."""
        good, rejected, message = split_valid(rows)
        result = self.store.ingest_rows(good) if good else IngestResult()
        result.rejected = rejected
        result.message = message
        loop = self.loop
        if loop is not None and good:
            traces = {r.trace_id for r in good}
            self._wake(loop, traces, {r.conversation_id for r in good if r.conversation_id is not None})
        return result

    def ingest_prepared(self, prepared: Prepared) -> IngestResult:
        """Store a request's rows made ready by its parse (``Parsers.prepare``) and wake the streams they
        concern; returns the counts."""
        result = self.store.ingest_prepared(prepared)
        loop = self.loop
        if loop is not None and prepared.sums:
            self._wake(loop, set(prepared.sums), set(prepared.conversations))
        return result

    def ingest_logs(self, records: list[LogRecord], rejected: int, message: str) -> IngestResult:
        """Store span-tied log records; returns the counts. Records are joined to their spans when a trace is
        read, so nothing live changes here; text deltas are relayed, never stored."""
        records, deltas = split_deltas(records)
        if deltas and self.loop is not None:
            self.deltas.relay(self.loop, deltas, self.store.trace_row)
        if deltas:
            try:  # to the clients of the other replicas of a shared store
                self.store.changes.publish_deltas(deltas)
            except Exception as e:  # a delta is never stored: its loss must not fail the export
                _logger.warning("toolspan serve: text deltas not sent to the other replicas: %s", e)
        result = self.store.ingest_logs(records) if records else IngestResult()
        result.accepted += len(deltas)
        result.rejected = rejected
        result.message = message
        return result

    def _wake(
        self, loop: asyncio.AbstractEventLoop, traces: set[str] | None, conversations: set[str]
    ) -> None:
        """Wake the streams a commit of ``traces`` concerns (any thread; ``None``: every stream). A stream of
        a conversation wakes also for a trace of it whose records written now do not name it: the store says
        which conversations the traces belong to (asked only while such a stream waits)."""
        if traces is not None and self.notifier.conversations_waiting:
            try:
                conversations = conversations | self.store.trace_conversations(sorted(traces))
            except Exception:  # the store cannot say now: every stream looks
                traces = None
        if not loop.is_closed():
            loop.call_soon_threadsafe(self.notifier.notify, traces, conversations)

    def decided(self) -> None:
        """A decision or cancel request was stored (on the event loop): wake the long polls here and on every
        other replica."""
        self.decisions.notify()
        try:
            self.store.changes.publish_control()
        except Exception as e:  # the other replicas' polls then see it at the end of their round
            _logger.warning("toolspan serve: a control change was not sent to the other replicas: %s", e)

    # --- streams ---------------------------------------------------------------------------------------

    def stream_response(
        self, chunks: AsyncIterator[bytes], headers: Mapping[str, str] | None = None
    ) -> EventStreamResponse:
        """The response sending ``chunks`` as server-sent events, counted while it runs; a client that stops
        reading is dropped and counted; the stream ends when the server shuts down."""
        response = EventStreamResponse(
            self._counted(chunks),
            send_timeout_s=self.config.send_timeout_s,
            on_drop=self._drop,
            ending=self.ending,
        )
        response.headers.update(headers or {})
        return response

    async def _counted(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        self.streams += 1
        try:
            async for chunk in chunks:
                yield chunk
        finally:
            self.streams -= 1
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                await aclose()

    def _drop(self) -> None:
        self.dropped_clients += 1
