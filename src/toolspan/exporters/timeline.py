"""A ``SpanExporter`` that writes the bridge's frontend formats as the run goes.

In ``directory`` (default ``TOOLSPAN_TIMELINE_DIR``, ``toolspan-timeline``):

- ``events.jsonl``: the act/observe event stream, one JSON object per line. An exporter sees a
  span only once it has ended, so a tool's ``act`` and ``observe`` lines are written together, in the
  order tool spans end (``LiveEventProcessor`` emits the act at tool start instead).
- ``<trace_id>.tree.json`` (``bridge.views.to_tree``) and ``<trace_id>.timeline.json``
  (``bridge.views.to_timelines``: the conversation document, or a list of them when one trace holds
  several conversations), written when the trace's root span ends. "Root" means a span without a
  local parent (no parent, or a remote one). Spans of a trace that arrive after its root ended
  rewrite both files. Files are replaced atomically, so a reader never sees half a file.

Spans are buffered per trace until then, within ``max_traces`` traces and ``max_spans`` spans: past
either bound, traces whose files are already written are forgotten first (oldest first), then the
oldest unfinished trace is written as it is and forgotten, with a warning. Spans that still come for
a forgotten trace are buffered anew and written to ``<trace_id>.part2.tree.json`` (``part3``, ...),
never over the files already written. ``shutdown()`` writes the files of every unfinished trace
(their roots never ended: the tree flags the orphans); it is idempotent, and exports after it return
``FAILURE``. ``force_flush()`` flushes ``events.jsonl`` only. The lines of one export are appended
to ``events.jsonl`` whole or not at all (a write cut short by a full disk is truncated back).
Thread-safe; errors are logged and reported as ``FAILURE``, never raised.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import IO, Any, Final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from toolspan._util import env as _env
from toolspan.bridge.facts import TOOL, classify
from toolspan.bridge.internal import finite
from toolspan.bridge.model import Span
from toolspan.bridge.readers import from_readable_spans
from toolspan.bridge.views import act_event, observe_event, to_timelines, to_tree
from toolspan.exporters._files import append_whole, ends_mid_line, flush_to_disk, open_append

__all__ = ["EVENTS_FILE", "TimelineJsonExporter"]

_logger = logging.getLogger(__name__)

EVENTS_FILE: Final = "events.jsonl"
TREE_SUFFIX: Final = ".tree.json"
TIMELINE_SUFFIX: Final = ".timeline.json"


def _dumps(value: Any, *, indent: int | None = None) -> str:
    """Strict JSON: a non-finite float is written as ``"NaN"``/``"Infinity"``/``"-Infinity"``."""
    separators = (",", ":") if indent is None else None
    try:
        return json.dumps(value, ensure_ascii=False, indent=indent, separators=separators, allow_nan=False)
    except ValueError:
        return json.dumps(finite(value), ensure_ascii=False, indent=indent, separators=separators)


class _Trace:
    __slots__ = ("done", "part", "spans", "stem")

    def __init__(self, trace_id: str, part: int) -> None:
        self.spans: list[Span] = []
        self.done = False  # its files were written since its root ended
        self.part = part
        self.stem = trace_id if part == 1 else f"{trace_id}.part{part}"


class TimelineJsonExporter(SpanExporter):
    """Write act/observe JSON Lines and per-trace tree and timeline files (see the module doc)."""

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        max_traces: int = 256,
        max_spans: int = 20_000,
    ) -> None:
        if directory is None:
            directory = _env.get(_env.TOOLSPAN_TIMELINE_DIR) or _env.TOOLSPAN_TIMELINE_DIR.default
        self._directory = os.fspath(directory)
        self._max_traces = max(1, max_traces)
        self._max_spans = max(1, max_spans)
        self._lock = threading.Lock()
        self._traces: OrderedDict[str, _Trace] = OrderedDict()
        self._span_count = 0
        # Traces dropped from the buffer -> their last part number, so spans that still come for one
        # go to new ``<trace_id>.partN.*`` files instead of overwriting the written ones.
        self._forgotten: OrderedDict[str, int] = OrderedDict()
        self._events: IO[bytes] | None = None
        self._shutdown = False
        self.evicted_traces = 0  # unfinished traces written early because the buffer was full

    @property
    def directory(self) -> str:
        return self._directory

    # --- SpanExporter ---

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            _logger.warning("toolspan: timeline exporter already shut down; %d spans dropped", len(spans))
            return SpanExportResult.FAILURE
        if not spans:
            return SpanExportResult.SUCCESS
        try:
            converted = from_readable_spans(spans)
            roots = {
                (f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}")
                for s in spans
                if s.context is not None and (s.parent is None or s.parent.is_remote)
            }
        except Exception:
            _logger.exception("toolspan: timeline exporter cannot read %d spans", len(spans))
            return SpanExportResult.FAILURE
        with self._lock:
            if self._shutdown:
                return SpanExportResult.FAILURE
            ok = self._write_events(converted)
            to_write: dict[str, _Trace] = {}
            for span in converted:
                trace = self._buffer(span)
                if (span.trace_id, span.span_id) in roots or trace.done:
                    trace.done = True
                    to_write[span.trace_id] = trace
            for trace_id, trace in to_write.items():  # once per trace, however many of its spans came
                ok = self._write_trace(trace_id, trace) and ok
            ok = self._evict() and ok
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush and fsync ``events.jsonl``. Trace files are written when their roots end."""
        with self._lock:
            return self._flush_events()

    def shutdown(self) -> None:
        """Write the files of unfinished traces, close ``events.jsonl``. Idempotent."""
        with self._lock:
            if self._shutdown:
                return
            self._shutdown = True
            unfinished = [tid for tid, trace in self._traces.items() if not trace.done]
            if unfinished:
                _logger.info(
                    "toolspan: writing %d traces whose root span had not ended at shutdown", len(unfinished)
                )
            for trace_id in unfinished:
                self._write_trace(trace_id, self._traces[trace_id])
            self._traces.clear()
            self._span_count = 0
            self._flush_events()
            if self._events is not None:
                try:
                    self._events.close()
                except OSError as exc:
                    _logger.warning("toolspan: cannot close %s: %s", self._events_path(), exc)
                self._events = None

    # --- internals (called with the lock held) ---

    def _events_path(self) -> str:
        return os.path.join(self._directory, EVENTS_FILE)

    def _write_events(self, spans: list[Span]) -> bool:
        lines: list[str] = []
        ok = True
        for span in spans:
            try:
                if classify(span) == TOOL:
                    lines.append(_dumps(act_event(span)) + "\n")
                    lines.append(_dumps(observe_event(span)) + "\n")
            except Exception:
                _logger.exception("toolspan: cannot make act/observe events of span %s", span.span_id)
                ok = False
        if not lines:
            return ok
        try:
            before = b""
            if self._events is None:
                self._events = open_append(self._events_path())
                before = b"\n" if ends_mid_line(self._events) else b""
            append_whole(self._events, before + "".join(lines).encode("utf-8"))
        except (OSError, ValueError) as exc:
            _logger.warning("toolspan: cannot write %s: %s", self._events_path(), exc)
            if self._events is not None:
                with contextlib.suppress(OSError):
                    self._events.close()
                self._events = None
            return False
        return ok

    def _flush_events(self) -> bool:
        return flush_to_disk(self._events, self._events_path())

    def _buffer(self, span: Span) -> _Trace:
        trace = self._traces.get(span.trace_id)
        if trace is None:
            part = self._forgotten.pop(span.trace_id, 0) + 1
            trace = self._traces[span.trace_id] = _Trace(span.trace_id, part)
        else:
            self._traces.move_to_end(span.trace_id)
        trace.spans.append(span)
        self._span_count += 1
        return trace

    def _evict(self) -> bool:
        ok = True
        while len(self._traces) > self._max_traces or self._span_count > self._max_spans:
            victim = next((tid for tid, trace in self._traces.items() if trace.done), None)
            if victim is None:
                victim = next(iter(self._traces))
                trace = self._traces[victim]
                self.evicted_traces += 1
                _logger.warning(
                    "toolspan: timeline buffer full (%d traces, %d spans); writing trace %s before its "
                    "root span ended (%d spans)",
                    len(self._traces),
                    self._span_count,
                    victim,
                    len(trace.spans),
                )
                ok = self._write_trace(victim, trace) and ok
            forgotten = self._traces.pop(victim)
            self._span_count -= len(forgotten.spans)
            self._forgotten[victim] = forgotten.part
            while len(self._forgotten) > 4 * self._max_traces:
                self._forgotten.popitem(last=False)
        return ok

    def _write_trace(self, trace_id: str, trace: _Trace) -> bool:
        ok = True
        try:
            tree: Any = to_tree(trace.spans)
            ok = self._replace(trace.stem + TREE_SUFFIX, tree) and ok
        except Exception:
            _logger.exception("toolspan: cannot build the tree of trace %s", trace_id)
            ok = False
        try:
            docs: list[dict[str, Any]] = to_timelines(trace.spans)
            payload: Any = docs[0] if len(docs) == 1 else docs
            ok = self._replace(trace.stem + TIMELINE_SUFFIX, payload) and ok
        except Exception:
            _logger.exception("toolspan: cannot build the timeline of trace %s", trace_id)
            ok = False
        return ok

    def _replace(self, name: str, value: Any) -> bool:
        """Write ``value`` as JSON to ``directory/name`` atomically (temporary file + rename)."""
        path = os.path.join(self._directory, name)
        tmp: str | None = None
        try:
            text = _dumps(value, indent=2)
            os.makedirs(self._directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self._directory, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, path)
            tmp = None
        except (OSError, ValueError, TypeError) as exc:
            _logger.warning("toolspan: cannot write %s: %s", path, exc)
            return False
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        return True
