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
one and the recording holds it; else the tool name and the call's whole arguments (the model's, before any
approver's edit), in recorded order (the n-th such call gets the n-th such record). The arguments are
compared with the digest recorded beside a captured copy that was cut, redacted or converted
(``toolspan.tool.call.arguments.digest``), else with the captured copy itself, so neither the recording's
byte budget nor the replaying process's changes which calls match. A recording that cannot tell calls apart
(a cut or redacted copy with no digest: recorded by an older toolspan) says so when such a call is reached.
Replay is step 4 of the decision chain (``chain``): the policy and the approver decide first.

A tool called from a thread that did not inherit the replay's context (a plain ``ThreadPoolExecutor``,
``loop.run_in_executor`` with threading not instrumented) is replayed by the one replay active in the
process; with several active, it cannot be told which, and the call fails with ``ReplayError`` rather than
run its body. A process started while a replay runs (``multiprocessing`` with ``spawn`` or
``forkserver``, a subprocess) inherits ``TOOLSPAN_REPLAYING``: a tool called there cannot be replayed from
it, and fails with ``ReplayError`` rather than run its body.

- ``until=`` (an ``execution_id``, or the 1-based number of a recorded tool call) travels in time: calls
  matching records before it are served; the call matching it, and every call that matches nothing after
  it, run for real; later calls matching a record that completed are still served (a committed side effect
  is never repeated).
- A call that matches nothing (before ``until``) raises ``ReplayDivergence`` with the recorded and the
  actual call side by side; ``on_divergence="live"`` runs it, and every call after it, for real instead.
- A call matching a record that never ended (``SEALED``: the recording process died in it) is never re-run
  silently: it raises ``ReplaySealed`` unless ``approve_sealed(record)`` returns true, then it runs for real.
- Results are JSON values; ``decode={"tool name": fn}`` turns them into the tool's own types. A result
  recorded cut, redacted or converted (``toolspan.tool.call.result.inexact``, or toolspan's markers in it,
  or text that is no JSON: cut by an SDK attribute length limit) is never served: ``ReplayError``.
- A recorded failure is raised as a ``ReplayedToolError`` whose class has the recorded exception's name
  (and derives from it, for a builtin exception: ``except KeyError`` still catches it) and whose text is
  the recorded message, so ``run_tool_calls`` answers the model exactly as in the recorded run; a recorded
  denial raises ``ToolDenied`` with its recorded note; a generator closed early yields the items it
  yielded before it was closed.
- A recording made with content capture off holds no arguments or results: ``replay()`` says so at once
  (``ReplayError``), as it does for a result cut at the byte budget when that call is reached.

Tool spans of the replayed run carry ``toolspan.replay.served`` (and, when matched,
``toolspan.replay.match``, ``toolspan.replay.source.trace_id``, ``toolspan.replay.source.execution_id``) and a
span Link to the original tool span; the replayed run is its own trace.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeVar, cast

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api

from toolspan import semconv
from toolspan._capture import serialize as _serialize
from toolspan._decisions import chain
from toolspan._instrument.context import TaskStack, own_tool_span, take_pending_call_id
from toolspan._instrument.info import Arguments, Serve, ToolInfo
from toolspan._util.ids import synthetic_call_id
from toolspan._util.words import DENY
from toolspan.errors import (
    ReplayDivergence,
    ReplayedToolError,
    ReplayError,
    ReplaySealed,
    ToolDenied,
)

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from toolspan.bridge.model import Span
    from toolspan.bridge.readers import Sources

__all__ = [
    "OnDivergence",
    "Recorded",
    "ReplayDivergence",
    "ReplayError",
    "ReplaySealed",
    "ReplaySource",
    "ReplayedToolError",
    "replay",
]

F = TypeVar("F", bound=Callable[..., Any])

ReplaySource: TypeAlias = "Sources | Sequence[Span] | Sequence[ReadableSpan]"
"""What a replay reads: anything the bridge reads (``toolspan.bridge.readers.Sources``: a trace file, files,
a directory, OTLP/Jaeger/Tempo documents), the URL of a trace held by ``toolspan serve``, or in-process
spans (the bridge's, or the SDK's ``ReadableSpan``)."""
OnDivergence: TypeAlias = Literal["raise", "live"]
"""What a call that matches nothing does: ``"raise"`` ``ReplayDivergence``, or run ``"live"`` from there."""
_TRUNCATED: Final = "...[truncated"


_ERROR_CLASSES: dict[tuple[str, str], type[ReplayedToolError]] = {}
_ERROR_CLASSES_LOCK: Final = threading.Lock()


def replayed_error(error_type: str, message: str, execution_id: str) -> ReplayedToolError:
    """A ``ReplayedToolError`` whose class is named like the recorded exception (the last part of
    ``error_type``), in the recorded module (``builtins`` for a builtin name without one), deriving from the
    builtin exception of that name when there is one: its span records the same ``error.type`` as the
    recorded call's (``KeyError``, ``app.errors.Quota``)."""
    module, _, name = error_type.rpartition(".")
    if not name.isidentifier():
        module, name = "", "ToolError"
    with _ERROR_CLASSES_LOCK:
        cls = _ERROR_CLASSES.get((module, name))
        if cls is None:
            native = getattr(builtins, name, None) if not module else None
            bases: tuple[type, ...] = (ReplayedToolError,)
            if (
                isinstance(native, type)
                and issubclass(native, Exception)
                and not issubclass(native, ReplayedToolError)
            ):
                bases = (ReplayedToolError, native)
            namespace = {"__module__": module or "builtins", "__qualname__": name}
            try:
                cls = type(name, bases, namespace)
            except TypeError:  # a builtin whose layout cannot be combined
                cls = type(name, (ReplayedToolError,), namespace)
            _ERROR_CLASSES[(module, name)] = cls
    return cls(error_type, message, execution_id)


@dataclass(frozen=True, slots=True)
class Recorded:
    """One recorded tool call."""

    index: int  # 0-based, in start order
    name: str
    arguments: Any
    key: str  # canonical JSON of the captured arguments
    digest: str | None  # of the whole arguments, when the captured copy may differ from them
    model_call_id: str | None
    state: str
    result: Any
    result_text: str | None
    error_type: str | None
    error_message: str
    trace_id: str
    span_id: str
    execution_id: str
    closed_early: bool = False  # a generator its consumer closed: ``result`` holds what it yielded
    denial_note: str | None = None
    # Why the recorded result is not the value the tool returned (cut, redacted, converted), if it is not.
    result_inexact: str | None = None

    @property
    def inexact(self) -> bool:
        """Whether the captured arguments were cut or redacted and no digest identifies the call."""
        return self.digest is None and (
            semconv.TRUNCATION_MARKER in self.key
            or semconv.REDACTED_VALUE in self.key
            or semconv.TRUNCATION_FALLBACK_KEY in self.key
        )


_canonical = _serialize.canonical


def _load(source: ReplaySource, trace_id: str | None, token: str | None = None) -> list[Recorded]:
    """The recorded tool calls of ``source`` (of trace ``trace_id`` only, when given), in start order."""
    from toolspan.bridge import coalesce
    from toolspan.bridge import facts as cl

    records: list[Recorded] = []
    seen: set[str] = set()
    for span in coalesce(_spans(source, trace_id, token)):
        if cl.classify(span) == cl.TOOL and span.span_id not in seen:
            seen.add(span.span_id)
            records.append(_recorded(span, len(records)))
    return records


def _spans(source: ReplaySource, trace_id: str | None, token: str | None) -> list[Span]:
    from opentelemetry.sdk.trace import ReadableSpan

    from toolspan._decisions import replay_source as _replay_source
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
    else:  # (in-process spans were taken above: what is left is what the readers read)
        spans, _ = read_spans(cast("Sources", source))
    if trace_id is None:
        return spans
    traces = sorted({s.trace_id for s in spans})
    spans = [s for s in spans if s.trace_id == trace_id.lower()]
    if not spans:
        raise ReplayError(
            f"trace {trace_id} is not in the recording (it holds {', '.join(traces) or 'none'})"
        )
    return spans


def _recorded(span: Span, index: int) -> Recorded:
    """The record of one tool span; ``ReplayError`` when the span holds no arguments or result."""
    from toolspan.bridge import facts as cl

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
    closed = any(e.name == semconv.GENERATOR_CLOSED_EVENT for e in span.events)
    result = tc.output
    if closed and result_text is not None:
        try:
            result = json.loads(result_text)
        except ValueError:
            result = None
    digest = attrs.get(semconv.TOOLSPAN_TOOL_CALL_ARGUMENTS_DIGEST)
    return Recorded(
        index=index,
        name=tc.name,
        arguments=tc.model_input,
        key=_canonical(tc.model_input),
        digest=digest if isinstance(digest, str) and digest.startswith("sha256:") else None,
        model_call_id=None if tc.call_id == synthetic_call_id(span.span_id) else tc.call_id,
        state=tc.state,
        result=result,
        result_text=None if result_text is None else str(result_text),
        error_type=error_type,
        error_message=message,
        trace_id=span.trace_id,
        span_id=span.span_id,
        execution_id=tc.execution_id,
        closed_early=closed and result_text is not None,
        denial_note=_denial_note(span) if tc.state == semconv.STATE_DENIED else None,
        result_inexact=_inexact_result(attrs, result_text, result),
    )


def _inexact_result(attrs: Any, text: Any, value: Any) -> str | None:
    """Why a recorded result is not the value its tool returned (``None`` when it is): the span says its copy
    may differ (``toolspan.tool.call.result.inexact``: cut, redacted, converted), or the text carries
    toolspan's markers (a recording that did not say), or it is no JSON at all (cut where toolspan did not
    mark it: an SDK attribute length limit)."""
    if text is None:
        return None
    if attrs.get(semconv.TOOLSPAN_TOOL_CALL_RESULT_INEXACT) is True:
        return "was cut or redacted when recorded"
    text = str(text)
    if _TRUNCATED in text or semconv.REDACTED_VALUE in text or semconv.TRUNCATION_FALLBACK_KEY in text:
        return "was cut or redacted when recorded"
    if value is text and text[:1] in '"{[-0123456789tfn':
        return "is not the JSON toolspan records (cut by an attribute length limit?)"
    return None


def _denial_note(span: Any) -> str | None:
    """The note of the call's last ``deny`` decision, as ``ToolDenied`` carried it."""
    note = None
    for event in span.events:
        if (
            event.name == semconv.PERMISSION_DECIDED_EVENT
            and event.attributes.get(semconv.PERMISSION_DECISION) == DENY
        ):
            raw = event.attributes.get(semconv.PERMISSION_NOTE)
            note = None if raw is None else str(raw)
    return note


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

    def _find(self, name: str, key: str, digest: str, model_id: str | None) -> tuple[Recorded | None, str]:
        player = self.player

        def same(rec: Recorded) -> bool:
            return rec.name == name and (rec.digest == digest if rec.digest is not None else rec.key == key)

        if model_id is not None:
            for rec in player.by_call_id.get(model_id, ()):
                if rec.index not in self.used:
                    return (rec, "call_id") if same(rec) else (None, "call_id")
        for rec in player.by_name.get(name, ()):
            if rec.index not in self.used and same(rec):
                return rec, "arguments"
        return None, "arguments"

    def _divergence(self, name: str, arguments: Arguments) -> ReplayError:
        blind = [r for r in self.player.by_name.get(name, ()) if r.index not in self.used and r.inexact]
        if blind:
            return ReplayError(
                f"replay cannot tell call {self.calls} apart: the recorded arguments of {name!r}"
                f" ({blind[0].execution_id}) were cut at the byte budget or redacted, and the recording holds"
                " no digest of the whole arguments (record with a newer toolspan)"
            )
        nxt = next((r for r in self.player.records if r.index not in self.used), None)
        expected = (
            "nothing more" if nxt is None else f"{nxt.name}({_canonical(nxt.arguments)}) [{nxt.execution_id}]"
        )
        actual = f"{name}({_canonical(arguments)})"
        return ReplayDivergence(
            f"replay diverged at call {self.calls}:\n  recorded: {expected}\n  actual:   {actual}"
        )

    def decide(
        self, name: str, arguments: Arguments, model_id: str | None
    ) -> tuple[Recorded | None, str, bool]:
        """``(record, match, serve)``: the matched record (or None) and whether to serve it."""
        key = _canonical(arguments)
        digest = _serialize.digest(arguments)
        with self.lock:
            self.calls += 1
            if self.live:
                return None, "", False
            rec, match = self._find(name, key, digest, model_id)
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

    def prepare(self, info: ToolInfo, arguments: Arguments) -> Serve | None:
        """Step 4 of the decision chain: what to give instead of the body (``None``: run it), for the
        call of ``info`` with the model's whole ``arguments``."""
        own = own_tool_span()
        if own is not None:
            span, frame = own
            call_id = frame.tool_call_id
            own_id = synthetic_call_id(span.get_span_context().span_id)
            model_id = None if call_id == own_id else call_id
        else:
            model_id = take_pending_call_id(context_api.get_current())
        rec, match, serve = self.decide(info.name, arguments, model_id)
        if own is not None and own[0].is_recording():
            attrs: dict[str, str | bool] = {semconv.TOOLSPAN_REPLAY_SERVED: serve}
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
        if rec.state == semconv.STATE_DENIED:
            raise ToolDenied(rec.denial_note)
        if rec.state != semconv.STATE_COMPLETED and not rec.closed_early:
            raise replayed_error(rec.error_type or "ToolError", rec.error_message, rec.execution_id)
        if rec.result_inexact is not None:
            raise ReplayError(
                f"the recorded result of {rec.name!r} ({rec.execution_id}) {rec.result_inexact}: it is not"
                " what the tool returned, so it is not served (record with a larger"
                " TOOLSPAN_MAX_ATTRIBUTE_BYTES, or without redacting it, to replay it)"
            )
        decode = self.player.decode.get(rec.name)
        return rec.result if decode is None else decode(rec.result)


class replay:
    """Serve recorded tool results instead of running tool bodies (see the module docstring)."""

    def __init__(
        self,
        source: ReplaySource,
        *,
        until: str | int | None = None,
        on_divergence: OnDivergence = "raise",
        trace_id: str | None = None,
        decode: Mapping[str, Callable[[Any], Any]] | None = None,
        approve_sealed: Callable[[Recorded], bool] | None = None,
        token: str | None = None,
    ) -> None:
        if on_divergence not in ("raise", "live"):
            raise ValueError(f"on_divergence must be 'raise' or 'live', not {on_divergence!r}")
        self.records = _load(source, trace_id, token)
        self.by_call_id: dict[str, list[Recorded]] = {}
        self.by_name: dict[str, list[Recorded]] = {}
        for rec in self.records:
            if rec.model_call_id is not None:
                self.by_call_id.setdefault(rec.model_call_id, []).append(rec)
            self.by_name.setdefault(rec.name, []).append(rec)
        self.on_divergence = on_divergence
        self.decode = dict(decode or {})
        self.approve_sealed = approve_sealed
        self.cut = self._cut(until)
        self._tokens: TaskStack[tuple[object, _Session]] = TaskStack("toolspan.replay")

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
        session = _Session(self)
        token = context_api.attach(context_api.set_value(chain.SESSION_KEY, session))
        self._tokens.push((token, session))
        chain.enter(session)
        chain.mark_processes(True)
        return self

    def __exit__(self, *exc: object) -> None:
        token, session = self._tokens.pop()
        chain.mark_processes(False)
        chain.leave(session)
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
