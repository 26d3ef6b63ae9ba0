"""Replay a recorded run without re-running its side effects.

``with toolspan.replay(source):`` (also a decorator; ``toolspan.testing.replay_fixture`` for pytest): inside
it, a decorated tool whose call matches the recording returns the recorded result, or raises the recorded
failure as ``ReplayedToolError``, **without running its body**. ``source`` is anything the bridge reads (a
trace file, a list of files, OTLP/Jaeger/Tempo documents, in-process spans) or the URL of a trace held by
``toolspan serve`` (``"http://host:port/api/traces/<trace id>"``, or the server's URL with ``trace_id=``;
``token=`` or ``TOOLSPAN_SERVER_TOKEN`` for a server with a bearer token; fetched whole before anything is
replayed, an unreachable server or unknown trace is a ``ReplayError``); with several traces in it, pick
one with ``trace_id=`` (by default the tool calls of every trace in it are replayed, in start order: tools
called outside any agent are each a trace of their own).

Matching, per call, against the recorded tool calls not yet used: the model's tool call id when the call has
one and the recording holds it; else the tool name and the canonical JSON of its arguments, in recorded
order (the n-th such call gets the n-th such record).

- ``until=`` (an ``execution_id``, or the 1-based number of a recorded tool call) travels in time: calls
  matching records before it are served; the call matching it, and every call that matches nothing after
  it, run for real; later calls matching a record that completed are still served (a committed side effect
  is never repeated).
- A call that matches nothing (before ``until``) raises ``ReplayDivergence`` with the recorded and the
  actual call side by side; ``on_divergence="live"`` runs it, and every call after it, for real instead.
- A call matching a record that never ended (``SEALED``: the recording process died in it) is never re-run
  silently: it raises ``ReplaySealed`` unless ``approve_sealed(record)`` returns true, then it runs for real.
- Results are JSON values; ``decode={"tool name": fn}`` turns them into the tool's own types.
- A recording made with content capture off holds no arguments or results: ``replay()`` says so at once
  (``ReplayError``), as it does for a result cut at the byte budget when that call is reached.

Tool spans of the replayed run carry ``toolspan.replay.served`` (and, when matched,
``toolspan.replay.match``, ``toolspan.replay.source.trace_id``, ``toolspan.replay.source.execution_id``) and a
span Link to the original tool span; the replayed run is its own trace.
"""

from __future__ import annotations

import functools
import inspect
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api

from toolspan import _intercept, semconv
from toolspan._context import TaskStack, take_pending_call_id
from toolspan._ids import synthetic_call_id

__all__ = ["ReplayDivergence", "ReplayError", "ReplaySealed", "ReplayedToolError", "Recorded", "replay"]

F = TypeVar("F", bound=Callable[..., Any])
_TRUNCATED: Final = "...[truncated"


class ReplayError(Exception):
    """A recording that cannot be replayed, or a replay that cannot go on."""


class ReplayDivergence(ReplayError):
    """The run asked for a tool call the recording does not hold."""


class ReplaySealed(ReplayError):
    """The matching recorded call never ended; re-running it needs ``approve_sealed``."""


class ReplayedToolError(Exception):
    """The recorded call failed: ``error_type`` and ``message`` are the recorded ones."""

    def __init__(self, error_type: str, message: str, execution_id: str) -> None:
        super().__init__(f"{error_type}: {message}" if message else error_type)
        self.error_type = error_type
        self.message = message
        self.execution_id = execution_id


@dataclass(frozen=True, slots=True)
class Recorded:
    """One recorded tool call."""

    index: int  # 0-based, in start order
    name: str
    arguments: Any
    key: str  # canonical JSON of the arguments
    model_call_id: str | None
    state: str
    result: Any
    result_text: str | None
    error_type: str | None
    error_message: str
    trace_id: str
    span_id: str
    execution_id: str


def _canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _load(source: Any, trace_id: str | None, token: str | None = None) -> list[Recorded]:
    from opentelemetry.sdk.trace import ReadableSpan

    from toolspan import _replay_source
    from toolspan.bridge import classify as cl
    from toolspan.bridge._coalesce import coalesce
    from toolspan.bridge.model import Span
    from toolspan.bridge.readers import from_readable_spans, read_spans

    if _replay_source.is_server_url(source):
        try:
            spans = _replay_source.fetch_spans(source, trace_id, token)
        except _replay_source.SourceError as e:
            raise ReplayError(str(e)) from None
    elif isinstance(source, list | tuple) and source and all(isinstance(s, Span) for s in source):
        spans = list(source)
    elif isinstance(source, list | tuple) and source and all(isinstance(s, ReadableSpan) for s in source):
        spans = from_readable_spans(source)
    else:
        spans, _ = read_spans(source)
    if trace_id is not None:
        traces = sorted({s.trace_id for s in spans})
        spans = [s for s in spans if s.trace_id == trace_id.lower()]
        if not spans:
            raise ReplayError(
                f"trace {trace_id} is not in the recording (it holds {', '.join(traces) or 'none'})"
            )
    records: list[Recorded] = []
    seen: set[str] = set()
    for span in coalesce(spans):
        if cl.classify(span) != cl.TOOL or span.span_id in seen:
            continue
        seen.add(span.span_id)
        tc = cl.tool_call(span)
        attrs = span.attributes
        args_text = attrs.get(semconv.GEN_AI_TOOL_CALL_ARGUMENTS, attrs.get(semconv.OI_INPUT_VALUE))
        result_text = attrs.get(semconv.GEN_AI_TOOL_CALL_RESULT, attrs.get(semconv.OI_OUTPUT_VALUE))
        if args_text is None or (tc.state == semconv.STATE_COMPLETED and result_text is None):
            raise ReplayError(
                "the recording was made with content capture off: tool"
                f" {tc.name!r} ({tc.execution_id}) has no recorded arguments or result; it cannot be replayed"
            )
        error_type, message = None, ""
        if tc.state != semconv.STATE_COMPLETED:
            error_type, message = _recorded_error(span, tc.error)
        model_id = None if tc.call_id == synthetic_call_id(span.span_id) else tc.call_id
        records.append(
            Recorded(
                index=len(records),
                name=tc.name,
                arguments=tc.input,
                key=_canonical(tc.input),
                model_call_id=model_id,
                state=tc.state,
                result=tc.output,
                result_text=None if result_text is None else str(result_text),
                error_type=error_type,
                error_message=message,
                trace_id=span.trace_id,
                span_id=span.span_id,
                execution_id=tc.execution_id,
            )
        )
    return records


def _recorded_error(span: Any, error: str | None) -> tuple[str, str]:
    for event in span.events:
        if event.name == semconv.EXCEPTION_EVENT:
            etype = event.attributes.get(semconv.EXCEPTION_TYPE)
            if etype:
                return str(etype), str(event.attributes.get(semconv.EXCEPTION_MESSAGE) or "")
    etype = span.attributes.get(semconv.ERROR_TYPE)
    if etype:
        return str(etype), span.status_message
    return "ToolError", error or ""


class _Session:
    """The state of one entry of ``replay``: which records are used, and whether the run went live."""

    def __init__(self, player: replay) -> None:
        self.player = player
        self.lock = threading.Lock()
        self.used: set[int] = set()
        self.live = False
        self.past_cut = False
        self.calls = 0

    # -- matching --------------------------------------------------------------------------------

    def _find(self, name: str, key: str, model_id: str | None) -> tuple[Recorded | None, str]:
        player = self.player
        if model_id is not None:
            for rec in player.by_call_id.get(model_id, ()):
                if rec.index not in self.used:
                    return (rec, "call_id") if rec.name == name and rec.key == key else (None, "call_id")
        for rec in player.by_key.get((name, key), ()):
            if rec.index not in self.used:
                return rec, "arguments"
        return None, "arguments"

    def _divergence(self, name: str, arguments: Any) -> ReplayDivergence:
        nxt = next((r for r in self.player.records if r.index not in self.used), None)
        expected = (
            "nothing more" if nxt is None else f"{nxt.name}({_canonical(nxt.arguments)}) [{nxt.execution_id}]"
        )
        actual = f"{name}({_canonical(arguments)})"
        return ReplayDivergence(
            f"replay diverged at call {self.calls}:\n  recorded: {expected}\n  actual:   {actual}"
        )

    def decide(self, name: str, arguments: Any, model_id: str | None) -> tuple[Recorded | None, str, bool]:
        """``(record, match, serve)``: the matched record (or None) and whether to serve it."""
        key = _canonical(arguments)
        with self.lock:
            self.calls += 1
            if self.live:
                return None, "", False
            rec, match = self._find(name, key, model_id)
            cut = self.player.cut
            if rec is None:
                if self.past_cut:
                    return None, "", False
                if self.player.on_divergence == "live":
                    self.live = True
                    return None, "", False
                raise self._divergence(name, arguments)
            self.used.add(rec.index)
            if cut is not None and rec.index >= cut:
                self.past_cut = True
                if rec.index == cut or rec.state != semconv.STATE_COMPLETED:
                    return rec, match, False
        if rec.state == semconv.STATE_SEALED:
            approve = self.player.approve_sealed
            if approve is not None and approve(rec):
                return rec, match, False
            raise ReplaySealed(
                f"tool {rec.name!r} ({rec.execution_id}) started but never ended in the recording; it is not"
                " re-run without approve_sealed"
            )
        return rec, match, True

    # -- the stand-in ----------------------------------------------------------------------------

    def _prepare(
        self, info: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Callable[[], Any] | None:
        own = _intercept.own_tool_span()
        if own is not None:
            span, frame = own
            call_id = frame.tool_call_id
            own_id = synthetic_call_id(span.get_span_context().span_id)
            model_id = None if call_id == own_id else call_id
        else:
            model_id = take_pending_call_id(context_api.get_current())
        arguments = _intercept.call_arguments(info, instance, args, kwargs)
        rec, match, serve = self.decide(info.name, arguments, model_id)
        if own is not None and own[0].is_recording():
            attrs: dict[str, Any] = {semconv.TOOLSPAN_REPLAY_SERVED: serve}
            if rec is not None:
                attrs[semconv.TOOLSPAN_REPLAY_MATCH] = match
                attrs[semconv.TOOLSPAN_REPLAY_SOURCE_TRACE_ID] = rec.trace_id
                attrs[semconv.TOOLSPAN_REPLAY_SOURCE_EXECUTION_ID] = rec.execution_id
                own[0].add_link(
                    trace_api.SpanContext(
                        int(rec.trace_id, 16), int(rec.span_id, 16), True, trace_api.TraceFlags(1)
                    )
                )
            own[0].set_attributes(attrs)
        if not serve:
            return None
        assert rec is not None
        return lambda: self._value(rec)

    def _value(self, rec: Recorded) -> Any:
        if rec.state != semconv.STATE_COMPLETED:
            raise ReplayedToolError(rec.error_type or "ToolError", rec.error_message, rec.execution_id)
        if rec.result_text is not None and _TRUNCATED in rec.result_text:
            raise ReplayError(
                f"the recorded result of {rec.name!r} ({rec.execution_id}) was cut at the byte budget; record"
                " with a larger TOOLSPAN_MAX_ATTRIBUTE_BYTES to replay it"
            )
        decode = self.player.decode.get(rec.name)
        return rec.result if decode is None else decode(rec.result)

    def stand_in(
        self, info: Any, wrapped: Callable[..., Any], instance: Any, kind: str
    ) -> Callable[..., Any]:
        return _intercept.body_stand_in(kind, wrapped, lambda a, k: self._prepare(info, instance, a, k))


class replay:
    """Serve recorded tool results instead of running tool bodies (see the module docstring)."""

    def __init__(
        self,
        source: Any,
        *,
        until: str | int | None = None,
        on_divergence: str = "raise",
        trace_id: str | None = None,
        decode: Mapping[str, Callable[[Any], Any]] | None = None,
        approve_sealed: Callable[[Recorded], bool] | None = None,
        token: str | None = None,
    ) -> None:
        if on_divergence not in ("raise", "live"):
            raise ValueError(f"on_divergence must be 'raise' or 'live', not {on_divergence!r}")
        self.records = _load(source, trace_id, token)
        self.by_call_id: dict[str, list[Recorded]] = {}
        self.by_key: dict[tuple[str, str], list[Recorded]] = {}
        for rec in self.records:
            if rec.model_call_id is not None:
                self.by_call_id.setdefault(rec.model_call_id, []).append(rec)
            self.by_key.setdefault((rec.name, rec.key), []).append(rec)
        self.on_divergence = on_divergence
        self.decode = dict(decode or {})
        self.approve_sealed = approve_sealed
        self.cut = self._cut(until)
        self._tokens: TaskStack[object] = TaskStack("toolspan.replay")

    def _cut(self, until: str | int | None) -> int | None:
        if until is None:
            return None
        if isinstance(until, int) and not isinstance(until, bool):
            if not 1 <= until <= len(self.records):
                raise ReplayError(f"until={until}: the recording has {len(self.records)} tool call(s)")
            return until - 1
        for rec in self.records:
            if rec.execution_id == until:
                return rec.index
        raise ReplayError(f"until={until!r}: no tool call with that execution_id in the recording")

    def __enter__(self) -> replay:
        # Each entry (task or thread) is a session of its own, with its own records used.
        token = context_api.attach(context_api.set_value(_intercept.SESSION_KEY, _Session(self)))
        self._tokens.push(token)
        _intercept.enter()
        return self

    def __exit__(self, *exc: object) -> None:
        token = self._tokens.pop()
        _intercept.leave()
        context_api.detach(token)  # type: ignore[arg-type]

    def __call__(self, fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                with self:
                    return await fn(*args, **kwargs)

            return run_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return run  # type: ignore[return-value]
