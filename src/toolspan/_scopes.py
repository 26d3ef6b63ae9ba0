"""``agent``, ``plan`` and ``thought``: the spans around tool calls.

``agent(name)`` makes ``invoke_agent {name}`` spans and ``plan(name)`` ``plan {name}`` spans; both
work as decorators and as (async) context managers yielding a ``Run`` handle. A plan or agent whose
parent is a tool span (started inside a running tool, or under a ``context=`` extracted from one)
carries ``toolspan.parent.execution_id`` / ``toolspan.parent.tool_call_id``. It also links to that
tool span when it starts a new trace (``new_trace=True``), when the tool span has already ended, or
when the tool span is in another process.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from contextvars import Token
from types import TracebackType
from typing import Any, TypeVar

import wrapt
from opentelemetry import baggage
from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.context import Context

from toolspan import _ids, _serialize, semconv
from toolspan._context import current_tool
from toolspan._gen import drive_async, drive_sync
from toolspan._messages import input_messages, output_messages
from toolspan._otel_internals import span_ended
from toolspan._outcome import end_span, record_outcome
from toolspan._params import ParamSpec, first_str_argument
from toolspan._tracer import get_tracer
from toolspan.config import get_config

_logger = logging.getLogger(__name__)

__all__ = ["Run", "Scope", "agent", "plan", "thought"]

F = TypeVar("F", bound=Callable[..., Any])

_AGENT = "agent"
_PLAN = "plan"


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

    def __init__(self, kind: str, span: trace_api.Span) -> None:
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
            span = self.span
            config = get_config()
            if value is None or not config.capture_content or not span.is_recording():
                return
            if self._kind == _AGENT:
                messages = output_messages(value) if output else input_messages(value)
                text = _serialize.dumps(messages, config)
                key = semconv.GEN_AI_OUTPUT_MESSAGES if output else semconv.GEN_AI_INPUT_MESSAGES
                attrs = {key: text}
            else:
                text = _serialize.dumps(value, config)
                attrs = {}
            if output:
                attrs[semconv.OI_OUTPUT_VALUE] = text
                attrs[semconv.OI_OUTPUT_MIME_TYPE] = semconv.MIME_JSON
            else:
                attrs[semconv.OI_INPUT_VALUE] = text
                attrs[semconv.OI_INPUT_MIME_TYPE] = semconv.MIME_JSON
            span.set_attributes(attrs)
        except Exception:
            _logger.warning(
                "toolspan: could not record the %s of a %s",
                "output" if output else "input",
                self._kind,
                exc_info=True,
            )


class _Active:
    """A started run: the span made current by ``enter`` and ended by ``exit``."""

    __slots__ = ("ctx", "run", "token")

    def __init__(self, run: Run, ctx: Context) -> None:
        self.run = run
        self.ctx = ctx
        self.token: Token[Context] | None = None

    # The GeneratorRun protocol of ``_gen``: the span stays open for the whole iteration.
    def item(self, value: Any) -> None:
        pass

    def ok(self, value: Any) -> None:
        end_span(self.run.span)

    def fail(self, exc: BaseException) -> None:
        record_outcome(self.run.span, exc, tool=False)
        end_span(self.run.span)

    def closed(self) -> None:
        self.fail(GeneratorExit())


class Scope:
    """An agent or plan: use as ``@decorator`` or ``with ... as run:`` (also ``async with``)."""

    def __init__(
        self,
        kind: str,
        name: str | None,
        attributes: dict[str, Any],
        *,
        input: Any,
        context: Context | None,
        new_trace: bool,
        tracer_provider: trace_api.TracerProvider | None,
    ) -> None:
        self._kind = kind
        self.name = name
        self._attributes = attributes
        self._input = input
        self._context = context
        self._new_trace = new_trace
        self._tracer_provider = tracer_provider
        self._stack: list[_Active] = []

    # -- starting ---------------------------------------------------------------------------------

    def _static_attributes(self, name: str) -> dict[str, Any]:
        if self._kind == _AGENT:
            attrs: dict[str, Any] = {
                semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT,
                semconv.GEN_AI_AGENT_NAME: name,
            }
            attrs.update(self._attributes)
            attrs[semconv.OPENINFERENCE_SPAN_KIND] = semconv.OI_KIND_AGENT
            attrs[semconv.OI_AGENT_NAME] = name
            return attrs
        return {semconv.TOOLSPAN_PLAN_NAME: name, semconv.OPENINFERENCE_SPAN_KIND: semconv.OI_KIND_CHAIN}

    def _start(self, name: str, input_value: Any) -> _Active:
        parent = self._context if self._context is not None else context_api.get_current()
        tracer = get_tracer(self._tracer_provider)
        if tracer is None:
            return _Active(Run(self._kind, trace_api.INVALID_SPAN), parent)
        span_name = (semconv.AGENT_SPAN_PREFIX if self._kind == _AGENT else semconv.PLAN_SPAN_PREFIX) + name
        try:
            attrs = self._static_attributes(name)
            links = None
            parent_span = trace_api.get_current_span(parent)
            parent_context = parent_span.get_span_context()
            ids = parent_tool_ids(parent)
            if ids is not None:
                attrs[semconv.TOOLSPAN_PARENT_EXECUTION_ID] = ids[0]
                attrs[semconv.TOOLSPAN_PARENT_TOOL_CALL_ID] = ids[1]
                ended = span_ended(parent_span)
                if self._new_trace or ended or parent_context.is_remote:
                    links = [trace_api.Link(parent_context)]
            elif self._new_trace and parent_context.is_valid:
                links = [trace_api.Link(parent_context)]
            start_ctx = (
                trace_api.set_span_in_context(trace_api.INVALID_SPAN, parent) if self._new_trace else parent
            )
            span = tracer.start_span(span_name, context=start_ctx, attributes=attrs, links=links)
        except Exception:
            _logger.warning("toolspan: could not start %s", span_name, exc_info=True)
            return _Active(Run(self._kind, trace_api.INVALID_SPAN), parent)
        run = Run(self._kind, span)
        run.set_input(input_value)
        return _Active(run, trace_api.set_span_in_context(span, parent))

    # -- context manager --------------------------------------------------------------------------

    def __enter__(self) -> Run:
        if self.name is None:
            raise TypeError(f"toolspan.{self._kind}() used with 'with' needs a name")
        active = self._start(self.name, self._input)
        active.token = context_api.attach(active.ctx)
        self._stack.append(active)
        return active.run

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        active = self._stack.pop()
        if active.token is not None:
            context_api.detach(active.token)
        if exc is not None:
            active.fail(exc)
        else:
            active.ok(None)

    async def __aenter__(self) -> Run:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    # -- decorator ----------------------------------------------------------------------------------

    def __call__(self, fn: F) -> F:
        func = getattr(fn, "__func__", fn)
        name = self.name or getattr(func, "__name__", None) or type(func).__name__
        params = ParamSpec.of(fn)
        kind = self._kind

        def input_of(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            if self._input is not None:
                return self._input
            if not get_config().capture_content:
                return None
            if kind == _AGENT:
                return first_str_argument(params, instance, args, kwargs)
            return params.bind(instance, args, kwargs)

        def begin(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Active:
            try:
                value = input_of(instance, args, kwargs)
            except Exception:
                _logger.warning("toolspan: could not read the input of %s", name, exc_info=True)
                value = None
            return self._start(name, value)

        if inspect.isasyncgenfunction(func) or inspect.isgeneratorfunction(func):
            is_async = inspect.isasyncgenfunction(func)

            def gen_wrapper(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
                gen = wrapped(*args, **kwargs)

                def start() -> _Active:
                    return begin(instance, args, kwargs)

                return drive_async(gen, start) if is_async else drive_sync(gen, start)

            return wrapt.FunctionWrapper(fn, gen_wrapper)  # type: ignore[return-value]

        if inspect.iscoroutinefunction(func):

            async def async_wrapper(
                wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any
            ) -> Any:
                active = begin(instance, args, kwargs)
                token = context_api.attach(active.ctx)
                try:
                    result = await wrapped(*args, **kwargs)
                except BaseException as exc:
                    context_api.detach(token)
                    active.fail(exc)
                    raise
                context_api.detach(token)
                active.run.set_output(result)
                active.ok(result)
                return result

            return wrapt.FunctionWrapper(fn, async_wrapper)  # type: ignore[return-value]

        def sync_wrapper(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
            active = begin(instance, args, kwargs)
            token = context_api.attach(active.ctx)
            try:
                result = wrapped(*args, **kwargs)
            except BaseException as exc:
                context_api.detach(token)
                active.fail(exc)
                raise
            context_api.detach(token)
            active.run.set_output(result)
            active.ok(result)
            return result

        return wrapt.FunctionWrapper(fn, sync_wrapper)  # type: ignore[return-value]


def agent(
    name: Any = None,
    *,
    input: Any = None,
    conversation_id: str | None = None,
    description: str | None = None,
    agent_id: str | None = None,
    context: Context | None = None,
    new_trace: bool = False,
    tracer_provider: trace_api.TracerProvider | None = None,
) -> Any:
    """An ``invoke_agent {name}`` span, as a decorator or a context manager.

        with toolspan.agent("planner", input="question", conversation_id="c1") as run:
            run.set_output("answer")

    As a decorator (``@toolspan.agent`` or ``@toolspan.agent(name=...)``), the first positional
    string argument (or a ``messages`` list) is the input and the return value the output.
    """
    attrs: dict[str, Any] = {}
    if agent_id is not None:
        attrs[semconv.GEN_AI_AGENT_ID] = agent_id
    if description is not None:
        attrs[semconv.GEN_AI_AGENT_DESCRIPTION] = description
    if conversation_id is not None:
        attrs[semconv.GEN_AI_CONVERSATION_ID] = conversation_id
    if callable(name):
        return Scope(
            _AGENT,
            None,
            attrs,
            input=input,
            context=context,
            new_trace=new_trace,
            tracer_provider=tracer_provider,
        )(name)
    return Scope(
        _AGENT,
        name,
        attrs,
        input=input,
        context=context,
        new_trace=new_trace,
        tracer_provider=tracer_provider,
    )


def plan(
    name: Any = None,
    *,
    input: Any = None,
    context: Context | None = None,
    new_trace: bool = False,
    tracer_provider: trace_api.TracerProvider | None = None,
) -> Any:
    """A ``plan {name}`` span, as a decorator or a context manager.

    Entered while a tool runs it is a sub-plan of that tool call. ``context=`` starts it under a
    given parent (e.g. ``toolspan.extract(carrier)``); ``new_trace=True`` starts a new trace that
    links back to the parent. As a decorator, the arguments are the input and the return value the
    output.
    """
    if callable(name):
        return Scope(
            _PLAN,
            None,
            {},
            input=input,
            context=context,
            new_trace=new_trace,
            tracer_provider=tracer_provider,
        )(name)
    return Scope(
        _PLAN, name, {}, input=input, context=context, new_trace=new_trace, tracer_provider=tracer_provider
    )


def thought(text: str) -> None:
    """Record the agent's reasoning ``text`` as a ``toolspan.thought`` event on the current span
    (the text only when content capture is on)."""
    try:
        span = trace_api.get_current_span()
        if not span.is_recording():
            return
        config = get_config()
        attrs: dict[str, Any] = {}
        if config.capture_content:
            attrs[semconv.THOUGHT_CONTENT] = _fit_text(str(text), config.max_attribute_bytes)
        span.add_event(semconv.THOUGHT_EVENT, attrs)
    except Exception:
        _logger.warning("toolspan: could not record a thought", exc_info=True)


_CUT_MARK = "…[truncated]"


def _fit_text(text: str, budget: int) -> str:
    """``text`` within ``budget`` UTF-8 bytes; a cut text ends with ``…[truncated]``."""
    data = text.encode("utf-8")
    if len(data) <= budget:
        return text
    keep = max(0, budget - len(_CUT_MARK.encode("utf-8")))
    return data[:keep].decode("utf-8", "ignore") + _CUT_MARK
