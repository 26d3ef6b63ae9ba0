"""What agents and plans share: their kind, the ``Run`` handle, and a started run.

A ``Kind`` says what differs between an agent and a plan (span name, start attributes, how input and
output are recorded, what a decorated function's input is); ``Scope`` (``scopes``) does the rest.
"""

from __future__ import annotations

import logging
from contextvars import Token
from typing import Any

from opentelemetry import baggage
from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.context import Context

from toolspan import semconv
from toolspan._capture import serialize as _serialize
from toolspan._instrument.context import current_tool
from toolspan._instrument.outcome import end_span, record_outcome
from toolspan._instrument.params import Parameters
from toolspan._util import ids as _ids
from toolspan.config import Config, get_config

_logger = logging.getLogger(__name__)

__all__ = ["Active", "Kind", "Run", "content_attributes", "parent_tool_ids", "value_attributes"]


class Kind:
    """What makes an agent an agent and a plan a plan; one module-level instance per kind."""

    name = ""
    span_prefix = ""

    def __reduce__(self) -> str:
        return self.name.upper()  # the module-level instance, by reference

    def attributes(self, name: str, extra: dict[str, Any]) -> dict[str, Any]:
        """The start attributes of a run called ``name``."""
        raise NotImplementedError

    def decorated_input(
        self, params: Parameters, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """The input of a call of a decorated function: its arguments."""
        return params.bind(instance, args, kwargs)

    def content_attributes(self, value: Any, output: bool, config: Config) -> dict[str, Any]:
        """The attributes recording ``value`` as the input or output (content capture is on)."""
        text = _serialize.dumps(value, config)
        return value_attributes(text, output)


def value_attributes(text: str, output: bool) -> dict[str, Any]:
    if output:
        return {semconv.OI_OUTPUT_VALUE: text, semconv.OI_OUTPUT_MIME_TYPE: semconv.MIME_JSON}
    return {semconv.OI_INPUT_VALUE: text, semconv.OI_INPUT_MIME_TYPE: semconv.MIME_JSON}


def parent_tool_ids(ctx: Context) -> tuple[str, str] | None:
    """The ids of the tool span that is the current span of ``ctx`` (local, or remote via baggage)."""
    parent = trace_api.get_current_span(ctx)
    frame = current_tool(ctx)
    if frame is not None and frame.span is parent:
        return frame.execution_id, frame.tool_call_id
    span_context = parent.get_span_context()
    if not span_context.is_valid:
        return None
    execution_id = baggage.get_baggage(semconv.BAGGAGE_EXECUTION_ID, ctx)
    if not isinstance(execution_id, str) or _ids.parse_execution_id(execution_id) != span_context.span_id:
        return None  # no tool ids, or ids of another span than this parent
    call_id = baggage.get_baggage(semconv.BAGGAGE_TOOL_CALL_ID, ctx)
    return execution_id, call_id if isinstance(call_id, str) and call_id else _ids.synthetic_call_id(
        span_context.span_id
    )


class Run:
    """The handle of one agent or plan run: its span, its id, and setters for what it was asked and
    what it answered (recorded only when content capture is on)."""

    __slots__ = ("_kind", "span")

    def __init__(self, kind: Kind, span: trace_api.Span) -> None:
        self._kind = kind
        self.span = span

    @property
    def execution_id(self) -> str | None:
        """``"exec_" + <16-hex span id>`` of this run, ``None`` when tracing is off."""
        span_context = self.span.get_span_context()
        return _ids.execution_id(span_context.span_id) if span_context.is_valid else None

    def set_input(self, value: Any) -> None:
        """Record the input: for an agent a string or a list of chat messages (``gen_ai.input.messages``)."""
        self._set(value, output=False)

    def set_output(self, value: Any) -> None:
        """Record the output: for an agent a string or message(s) (``gen_ai.output.messages``)."""
        self._set(value, output=True)

    def _set(self, value: Any, *, output: bool) -> None:
        try:
            if self.span.is_recording():
                self.span.set_attributes(content_attributes(self._kind, value, output=output))
        except Exception:
            _logger.warning(
                "toolspan: could not record a value on a %s's span", self._kind.name, exc_info=True
            )


def content_attributes(kind: Kind, value: Any, *, output: bool) -> dict[str, Any]:
    """The attributes recording ``value`` as a run's input or output (none when ``value`` is ``None`` or
    content capture is off, or when it cannot be recorded: logged)."""
    try:
        config = get_config()
        if value is None or not config.capture_content:
            return {}
        return kind.content_attributes(value, output, config)
    except Exception:
        _logger.warning(
            "toolspan: could not record the %s of a %s",
            "output" if output else "input",
            kind.name,
            exc_info=True,
        )
        return {}


class Active:
    """A started run: the span made current by ``enter`` and ended by ``exit``."""

    __slots__ = ("ctx", "run", "token")

    def __init__(self, run: Run, ctx: Context) -> None:
        self.run = run
        self.ctx = ctx
        self.token: Token[Context] | None = None

    # The GeneratorRun protocol of ``generators``: the span stays open for the whole iteration.
    def item(self, value: Any) -> None:
        pass

    def ok(self, value: Any) -> None:
        end_span(self.run.span)

    def fail(self, exc: BaseException) -> None:
        record_outcome(self.run.span, exc, tool=False)
        end_span(self.run.span)

    def closed(self) -> None:
        self.fail(GeneratorExit())

    def leave(self, token: Token[Context], exc: BaseException | None, result: Any = None) -> Any:
        """End a decorated call: restore the caller's context, record the outcome; returns ``result``."""
        context_api.detach(token)
        if exc is not None:
            self.fail(exc)
        else:
            self.run.set_output(result)
            self.ok(result)
        return result
