"""Pending records: a tool span exported once more when it *starts*, so a backend sees a running tool.

OTLP only carries spans, and exporters only see spans that ended, so the act of a long tool would reach a
server only with its observe. ``PendingSpanProcessor`` exports, at the start of every tool span, a copy of
the span as it is then, with no end time (``end_time_unix_nano`` 0: the "pending span" pattern), through an
ordinary ``SpanExporter`` (by default an OTLP exporter configured from the standard ``OTEL_EXPORTER_OTLP_*``
variables). It is a plain span, so any Collector in between passes it on unchanged. The span ends later and
is exported again by the application's usual processor; both records share trace id and span id (and so
``execution_id``), and every toolspan reader merges them into the ended span (see
``toolspan.bridge._coalesce``). A tool whose process died leaves only its pending record: the bridge reports
it ``SEALED``.

While a tool span is open, ``refresh_pending(span)`` exports a fresh pending record of it through every
processor that exported its start: toolspan calls it when the span records ``permission_required`` and
``permission_decided``, so a server sees a call wait for its approval (AWAITING_APPROVAL) while it waits.
A call ``run_tool_calls(approve=...)`` gates gets no start record: its approver is asked right away, and
the record of ``permission_required`` is its first, so no server ever shows it running before approved.
Records of one span are exported in order; the bridge merges them all into one span (events: their union;
attributes: the ended record's first).

    provider.add_span_processor(PendingSpanProcessor())       # or TOOLSPAN_PENDING_SPANS=true + configure()

Records go through their own small batch queue (flushed every ``schedule_delay_millis``, 50 ms by default,
so a tool is visible while it runs) and never block the tool; a full queue drops records (the SDK logs it).
The exporter is borrowed: shutting this processor down flushes its queue but leaves the exporter open for
the application's own processor.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

from opentelemetry import context as context_api
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace import Span as SdkSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from toolspan import semconv
from toolspan._instrument import hooks
from toolspan.bridge.facts import TOOL, classify
from toolspan.bridge.readers import from_readable_span

__all__ = ["PendingSpanProcessor", "pending_record"]

_logger = logging.getLogger(__name__)
DEFAULT_DELAY_MS: Final = 50


class _Borrowed(SpanExporter):
    """Forwards exports to an exporter someone else owns (and shuts down)."""

    def __init__(self, exporter: SpanExporter) -> None:
        self._exporter = exporter

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self._exporter.export(spans)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._exporter.force_flush(timeout_millis)

    def shutdown(self) -> None:
        pass


def _default_exporter() -> SpanExporter:
    from toolspan._util import env as _env

    protocol = _env.get(_env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) or _env.get(_env.OTEL_EXPORTER_OTLP_PROTOCOL)
    if protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

        return HttpExporter()
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

    return GrpcExporter()


def pending_record(span: ReadableSpan) -> ReadableSpan:
    """A frozen copy of a started span with no end time (what is exported at its start)."""
    return ReadableSpan(
        name=span.name,
        context=span.get_span_context(),
        parent=span.parent,
        resource=span.resource,
        attributes=dict(span.attributes or {}),
        events=tuple(span.events),
        links=tuple(span.links),
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=None,
        instrumentation_scope=span.instrumentation_scope,
    )


def _gated(parent_context: context_api.Context | None) -> bool:
    """Whether this span is the call an approval gate marked (the first span started under the mark)."""
    mark = None if parent_context is None else parent_context.get(semconv.CONTEXT_APPROVAL_GATE)
    if not isinstance(mark, list):
        return False
    try:
        mark.pop()  # one-shot: spans the call's body starts are exported as usual
    except IndexError:
        return False
    return True


class PendingSpanProcessor(SpanProcessor):
    """Export a pending record of each tool span at its start (see the module docstring).

    ``exporter``: where records go (borrowed, never shut down here); ``None`` builds an OTLP exporter from
    the ``OTEL_EXPORTER_OTLP_*`` variables (then owned and shut down here). ``tools_only=False`` sends a
    record for every span (agents and plans too).
    """

    def __init__(
        self,
        exporter: SpanExporter | None = None,
        *,
        schedule_delay_millis: int = DEFAULT_DELAY_MS,
        max_queue_size: int = 2048,
        tools_only: bool = True,
    ) -> None:
        target = _default_exporter() if exporter is None else _Borrowed(exporter)
        self._batch = BatchSpanProcessor(
            target,
            schedule_delay_millis=schedule_delay_millis,
            max_queue_size=max_queue_size,
            max_export_batch_size=min(512, max_queue_size),
        )
        self._tools_only = tools_only
        # (trace id, span id) of the open spans whose start this processor exported.
        self._open: set[tuple[int, int]] = set()
        hooks.register(self)  # on_refresh: a fresh record when an approval is asked for or decided

    def on_start(self, span: SdkSpan, parent_context: context_api.Context | None = None) -> None:
        try:
            record = pending_record(span)
            if self._tools_only and classify(from_readable_span(record)) != TOOL:
                return
            ctx = span.get_span_context()
            self._open.add((ctx.trace_id, ctx.span_id))
            if not _gated(parent_context):
                self._batch.on_end(record)
        except Exception:
            _logger.exception("toolspan: pending record failed for span %r", getattr(span, "name", "?"))

    def on_refresh(self, span: Any) -> None:
        """Export a fresh pending record of ``span`` if this processor exported its start and it is open
        (the ``SpanHook`` the instrumentation calls when an approval is asked for or decided)."""
        try:
            ctx = span.get_span_context()
            if (ctx.trace_id, ctx.span_id) in self._open and getattr(span, "end_time", None) is None:
                self._batch.on_end(pending_record(span))
        except Exception:
            _logger.exception("toolspan: pending record failed for span %r", getattr(span, "name", "?"))

    def follows(self, span: Any) -> bool:
        """Whether this processor exports records of ``span`` while it runs (``hooks.followed``)."""
        ctx = span.get_span_context()
        return (ctx.trace_id, ctx.span_id) in self._open

    def on_end(self, span: ReadableSpan) -> None:
        ctx = span.get_span_context()
        if ctx is not None:
            self._open.discard((ctx.trace_id, ctx.span_id))

    def on_text_delta(self, span: Any, event: dict[str, Any]) -> None:
        """Text deltas are not pending records: nothing to do."""

    def shutdown(self) -> None:
        hooks.unregister(self)
        self._open.clear()
        self._batch.shutdown()  # type: ignore[no-untyped-call]

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        result: Any = self._batch.force_flush(timeout_millis)
        return bool(result)
