"""``Scope``: the machinery of ``agent(...)`` and ``plan(...)`` (``agent``, ``plan``).

A scope works as a decorator and as an (async) context manager yielding a ``Run`` handle. A plan or
agent whose parent is a tool span (started inside a running tool, or under a ``context=`` extracted
from one) carries ``toolspan.parent.execution_id`` / ``toolspan.parent.tool_call_id``. It also links
to that tool span when it starts a new trace (``new_trace=True``), when the tool span has already
ended, or when the tool span is in another process.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.context import Context

from toolspan import semconv
from toolspan._instrument.context import TaskStack, suppressed, with_agent
from toolspan._instrument.generators import drive_async, drive_sync
from toolspan._instrument.handle import Active, Kind, Run, content_attributes, parent_tool_ids
from toolspan._instrument.params import Parameters
from toolspan._instrument.tracer import get_tracer
from toolspan._instrument.wrappers import PicklableWrapper, Rebuild
from toolspan._util.otel_internals import span_ended
from toolspan.config import get_config

_logger = logging.getLogger(__name__)

__all__ = ["Scope", "make_scope"]

F = TypeVar("F", bound=Callable[..., Any])


class Scope:
    """An agent or plan: use as ``@decorator`` or ``with ... as run:`` (also ``async with``).

    Each entry is its own run: one object entered by several tasks or threads at once gives each its
    own span, ended by its own exit, and leaves each task's context as it found it.
    """

    def __init__(
        self,
        kind: Kind,
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
        # The runs this object has open, per task and thread: one object may be entered by many at once.
        self._open: TaskStack[Active] = TaskStack(f"toolspan.{kind.name}({name!r})")

    # -- starting ---------------------------------------------------------------------------------

    def _start(self, name: str, input_value: Any) -> Active:
        parent = self._context if self._context is not None else context_api.get_current()
        if self._kind.name == "agent":
            parent = with_agent(name, parent)
        tracer = get_tracer(self._tracer_provider)
        if tracer is None or suppressed(parent):
            return Active(Run(self._kind, trace_api.INVALID_SPAN), parent)
        span_name = self._kind.span_prefix + name
        try:
            # The input is known at the start: a sampler and a pending record of the start see it.
            attrs = {
                **self._kind.attributes(name, self._attributes),
                **content_attributes(self._kind, input_value, output=False),
            }
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
            return Active(Run(self._kind, trace_api.INVALID_SPAN), parent)
        if not span.is_recording() and span.get_span_context() == parent_context:
            # A tracer disabled by the SDK's configurator hands back the parent's span: no span, no ids.
            return Active(Run(self._kind, trace_api.INVALID_SPAN), parent)
        return Active(Run(self._kind, span), trace_api.set_span_in_context(span, parent))

    # -- context manager --------------------------------------------------------------------------

    def __enter__(self) -> Run:
        if self.name is None:
            raise TypeError(f"toolspan.{self._kind.name}() used with 'with' needs a name")
        active = self._start(self.name, self._input)
        active.token = context_api.attach(active.ctx)
        self._open.push(active)
        return active.run

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        active = self._open.pop()
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
        params = Parameters.of(fn)
        kind = self._kind

        def input_of(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            if self._input is not None:
                return self._input
            if not get_config().capture_content:
                return None
            return kind.decorated_input(params, instance, args, kwargs)

        def begin(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Active:
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

                def start() -> Active:
                    return begin(instance, args, kwargs)

                return drive_async(gen, start) if is_async else drive_sync(gen, start)

            return _ScopeWrapper(fn, gen_wrapper, self)  # type: ignore[return-value]

        if inspect.iscoroutinefunction(func):

            async def async_wrapper(
                wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any
            ) -> Any:
                active = begin(instance, args, kwargs)
                token = context_api.attach(active.ctx)
                try:
                    result = await wrapped(*args, **kwargs)
                except BaseException as exc:
                    active.leave(token, exc)
                    raise
                return active.leave(token, None, result)

            return _ScopeWrapper(fn, async_wrapper, self)  # type: ignore[return-value]

        def sync_wrapper(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
            active = begin(instance, args, kwargs)
            token = context_api.attach(active.ctx)
            try:
                result = wrapped(*args, **kwargs)
            except BaseException as exc:
                active.leave(token, exc)
                raise
            return active.leave(token, None, result)

        return _ScopeWrapper(fn, sync_wrapper, self)  # type: ignore[return-value]


class _ScopeWrapper(PicklableWrapper):
    """A function decorated by ``agent``/``plan``; pickles and copies like it (see ``wrappers``)."""

    def __init__(self, wrapped: Any, wrapper: Callable[..., Any], scope: Scope) -> None:
        super().__init__(wrapped, wrapper)
        self._self_scope = scope

    def _self_rebuild(self) -> Rebuild:
        scope = self._self_scope
        options = (scope._kind, scope.name, scope._attributes, scope._input, scope._new_trace)
        return _rebuild_scope, (self.__wrapped__, *options)


def _rebuild_scope(  # noqa: PLR0917 - the arguments pickle writes
    fn: Any, kind: Kind, name: str | None, attributes: dict[str, Any], input: Any, new_trace: bool
) -> Any:
    """An agent or plan unpickled by value: ``fn`` decorated again (no context, global provider)."""
    scope = Scope(
        kind, name, attributes, input=input, context=None, new_trace=new_trace, tracer_provider=None
    )
    return scope(fn)


def make_scope(
    kind: Kind,
    name: Any,
    attributes: dict[str, Any],
    *,
    input: Any,
    context: Context | None,
    new_trace: bool,
    tracer_provider: trace_api.TracerProvider | None,
) -> Any:
    """A ``Scope``; used bare as ``@agent``/``@plan`` (``name`` is the function): the function decorated."""
    options = {"input": input, "context": context, "new_trace": new_trace, "tracer_provider": tracer_provider}
    if callable(name):
        return Scope(kind, None, attributes, **options)(name)
    return Scope(kind, name, attributes, **options)
