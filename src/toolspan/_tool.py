"""``@tool``, ``wrap`` and ``wrap_tools``: every call of a tool becomes an ``execute_tool {name}`` span.

Everything that does not change between calls (names, description, parameter layout, the start
attribute template) is computed once, at decoration. Per call:

- no SDK tracer provider installed (and no ``tracer_provider=``): the call goes straight through;
- otherwise the span starts with the static attributes, ``gen_ai.tool.call.id`` when a model id was
  handed over, and the arguments (all visible to ``SpanProcessor.on_start``). The arguments are
  serialized lazily: only when the SDK reads the start attributes, which it does only for a span it
  records, so a sampled-out call serializes nothing;
- the ids are set right after start, the state and result at the end.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar, overload

import wrapt
from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.context import Context

from toolspan import _serialize, semconv
from toolspan._context import (
    TOOL_KEY,
    ToolFrame,
    current_tool,
    take_pending_call_id,
    tool_call_id,
)
from toolspan._gen import drive_async, drive_sync
from toolspan._outcome import ToolDenied, end_span, record_outcome
from toolspan._params import ParamSpec
from toolspan._tracer import get_tracer
from toolspan.config import Config, get_config

_logger = logging.getLogger(__name__)

__all__ = [
    "ToolDenied",
    "ToolInfo",
    "record_permission_decided",
    "record_permission_required",
    "tool",
    "tool_call_id",
    "tool_info",
    "wrap",
    "wrap_tools",
]

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")

_TEXT_ATTRS = (semconv.GEN_AI_TOOL_CALL_ARGUMENTS, semconv.OI_INPUT_VALUE)
_DECISIONS = {True: "allow", False: "deny", "allow": "allow", "deny": "deny"}


def _description(obj: Any) -> str | None:
    """The first paragraph of the docstring, on one line."""
    func = getattr(obj, "__func__", obj)
    doc = inspect.getdoc(func)
    if not doc:
        return None
    paragraph = doc.strip().split("\n\n", 1)[0]
    return " ".join(line.strip() for line in paragraph.splitlines()) or None


class ToolInfo:
    """What ``@tool`` computed once for a function."""

    __slots__ = ("base_attributes", "description", "func", "name", "params", "span_name", "tool_type", "tracer_provider")

    def __init__(
        self,
        func: Any,
        name: str,
        description: str | None,
        tool_type: str,
        tracer_provider: trace_api.TracerProvider | None,
    ) -> None:
        self.func = func
        self.name = name
        self.description = description
        self.tool_type = tool_type
        self.tracer_provider = tracer_provider
        self.span_name = semconv.TOOL_SPAN_PREFIX + name
        self.params = ParamSpec.of(func)
        attrs: dict[str, Any] = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_EXECUTE_TOOL,
            semconv.GEN_AI_TOOL_NAME: name,
            semconv.GEN_AI_TOOL_TYPE: tool_type,
        }
        if description:
            attrs[semconv.GEN_AI_TOOL_DESCRIPTION] = description
        attrs[semconv.OPENINFERENCE_SPAN_KIND] = semconv.OI_KIND_TOOL
        attrs[semconv.OI_TOOL_NAME] = name
        if description:
            attrs[semconv.OI_TOOL_DESCRIPTION] = description
        self.base_attributes = attrs


class _StartAttributes(dict[str, Any]):
    """The start attributes of a tool span; the arguments are added on the first read.

    The SDK reads the attributes given to ``start_span`` only when it records the span (samplers
    that drop a span do not look at them), so a dropped span never pays for serialization.
    """

    __slots__ = ("_pending",)

    def __init__(self, base: dict[str, Any], pending: tuple[Any, ...] | None) -> None:
        super().__init__(base)
        self._pending = pending

    def fill(self) -> None:
        pending = self._pending
        if pending is None:
            return
        self._pending = None
        info, instance, args, kwargs, config = pending
        try:
            text = _serialize.dumps(info.params.bind(instance, args, kwargs), config)
        except Exception:
            _logger.warning("toolspan: could not record the arguments of %s", info.name, exc_info=True)
            return
        dict.__setitem__(self, semconv.GEN_AI_TOOL_CALL_ARGUMENTS, text)
        dict.__setitem__(self, semconv.OI_INPUT_VALUE, text)
        dict.__setitem__(self, semconv.OI_INPUT_MIME_TYPE, semconv.MIME_JSON)

    @property
    def filled(self) -> bool:
        return self._pending is None

    def __len__(self) -> int:
        self.fill()
        return dict.__len__(self)

    def __iter__(self) -> Iterator[str]:
        self.fill()
        return dict.__iter__(self)

    def __contains__(self, key: object) -> bool:
        self.fill()
        return dict.__contains__(self, key)

    def __getitem__(self, key: str) -> Any:
        self.fill()
        return dict.__getitem__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        self.fill()
        return dict.get(self, key, default)

    def items(self) -> Any:
        self.fill()
        return dict.items(self)

    def keys(self) -> Any:
        self.fill()
        return dict.keys(self)

    def values(self) -> Any:
        self.fill()
        return dict.values(self)

    def copy(self) -> dict[str, Any]:
        self.fill()
        return dict(dict.items(self))


class _ToolRun:
    """One running tool call: its span, context and what a generator yielded so far."""

    __slots__ = ("aggregate", "config", "count", "ctx", "info", "items", "limit", "span")

    def __init__(
        self,
        info: ToolInfo,
        tracer: trace_api.Tracer,
        instance: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        call_id: str | None,
        parent: Context,
    ) -> None:
        self.info = info
        self.aggregate = False
        self.count = 0
        self.items: list[Any] | None = None
        self.limit = 0
        config = self.config = get_config()
        attrs = _StartAttributes(
            info.base_attributes, (info, instance, args, kwargs, config) if config.capture_content else None
        )
        if call_id is not None:
            dict.__setitem__(attrs, semconv.GEN_AI_TOOL_CALL_ID, call_id)
        span = self.span = tracer.start_span(info.span_name, context=parent, attributes=attrs)
        span_context = span.get_span_context()
        if not span_context.is_valid:
            self.ctx = trace_api.set_span_in_context(span, parent)
            return
        hex_id = format(span_context.span_id, "016x")
        frame = ToolFrame(
            span,
            semconv.EXECUTION_ID_PREFIX + hex_id,
            call_id if call_id is not None else semconv.CALL_ID_PREFIX + hex_id,
        )
        self.ctx = context_api.set_value(TOOL_KEY, frame, trace_api.set_span_in_context(span, parent))
        if span.is_recording():
            ids = {semconv.TOOLSPAN_EXECUTION_ID: frame.execution_id, semconv.TOOLSPAN_TOOL_CALL_ID: frame.tool_call_id}
            if not attrs.filled:  # an SDK that did not read the start attributes: set them now
                attrs.fill()
                for key in (*_TEXT_ATTRS, semconv.OI_INPUT_MIME_TYPE):
                    if key in attrs:
                        ids[key] = dict.__getitem__(attrs, key)
            span.set_attributes(ids)

    # -- generator aggregation -------------------------------------------------------------------

    def start_items(self) -> None:
        self.aggregate = True
        if self.config.capture_content and self.span.is_recording():
            self.items = []
            # Each JSON item takes at least 2 bytes (value and comma): more cannot fit the budget.
            self.limit = self.config.max_attribute_bytes // 2 + 1

    def item(self, value: Any) -> None:
        self.count += 1
        items = self.items
        if items is not None and len(items) < self.limit:
            items.append(value)

    # -- endings ---------------------------------------------------------------------------------

    def ok(self, result: Any) -> None:
        span = self.span
        try:
            if span.is_recording():
                attrs: dict[str, Any] = {semconv.TOOLSPAN_TOOL_STATE: semconv.STATE_COMPLETED}
                config = self.config
                if self.aggregate:
                    result = self.items
                    attrs[semconv.TOOLSPAN_RESULT_ITEMS] = self.count
                if config.capture_content:
                    text = _serialize.dumps(result, config)
                    attrs[semconv.GEN_AI_TOOL_CALL_RESULT] = text
                    attrs[semconv.OI_OUTPUT_VALUE] = text
                    attrs[semconv.OI_OUTPUT_MIME_TYPE] = semconv.MIME_JSON
                span.set_attributes(attrs)
        except Exception:
            _logger.warning("toolspan: could not record the result of %s", self.info.name, exc_info=True)
        end_span(span)

    def fail(self, exc: BaseException) -> None:
        extra = {semconv.TOOLSPAN_RESULT_ITEMS: self.count} if self.aggregate else {}
        record_outcome(self.span, exc, tool=True, **extra)
        end_span(self.span)

    def closed(self) -> None:
        try:
            if self.span.is_recording():
                self.span.add_event(semconv.GENERATOR_CLOSED_EVENT, {semconv.TOOLSPAN_RESULT_ITEMS: self.count})
        except Exception:
            _logger.warning("toolspan: could not record the early close of %s", self.info.name, exc_info=True)
        self.fail(GeneratorExit())


def _start(
    info: ToolInfo,
    tracer: trace_api.Tracer,
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    call_id: str | None,
    parent: Context,
) -> _ToolRun | None:
    try:
        return _ToolRun(info, tracer, instance, args, kwargs, call_id, parent)
    except Exception:
        _logger.warning("toolspan: could not start the span of %s", info.name, exc_info=True)
        return None


def _sync_wrapper(info: ToolInfo) -> Callable[..., Any]:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        tracer = get_tracer(info.tracer_provider)
        if tracer is None:
            return wrapped(*args, **kwargs)
        parent = context_api.get_current()
        run = _start(info, tracer, instance, args, kwargs, take_pending_call_id(parent), parent)
        if run is None:
            return wrapped(*args, **kwargs)
        token = context_api.attach(run.ctx)
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            context_api.detach(token)
            run.fail(exc)
            raise
        context_api.detach(token)
        run.ok(result)
        return result

    return wrapper


def _async_wrapper(info: ToolInfo) -> Callable[..., Any]:
    async def run_async(
        tracer: trace_api.Tracer,
        wrapped: Callable[..., Any],
        instance: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        call_id: str | None,
    ) -> Any:
        parent = context_api.get_current()
        run = _start(info, tracer, instance, args, kwargs, call_id, parent)
        if run is None:
            return await wrapped(*args, **kwargs)
        token = context_api.attach(run.ctx)
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            context_api.detach(token)
            run.fail(exc)
            raise
        context_api.detach(token)
        run.ok(result)
        return result

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        tracer = get_tracer(info.tracer_provider)
        if tracer is None:
            return wrapped(*args, **kwargs)
        # The model's id is taken when the tool is called, the span starts when it is awaited.
        call_id = take_pending_call_id(context_api.get_current())
        return run_async(tracer, wrapped, instance, args, kwargs, call_id)

    return wrapper


def _generator_wrapper(info: ToolInfo, is_async: bool) -> Callable[..., Any]:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        tracer = get_tracer(info.tracer_provider)
        if tracer is None:
            return wrapped(*args, **kwargs)
        call_id = take_pending_call_id(context_api.get_current())
        gen = wrapped(*args, **kwargs)

        def start() -> _ToolRun:
            run = _start(info, tracer, instance, args, kwargs, call_id, context_api.get_current())
            if run is None:  # telemetry failed: iterate under a span that records nothing
                run = _ToolRun.__new__(_ToolRun)
                run.info, run.span, run.count, run.items, run.limit = info, trace_api.INVALID_SPAN, 0, None, 0
                run.aggregate = False
                run.ctx, run.config = context_api.get_current(), get_config()
            run.start_items()
            return run

        return drive_async(gen, start) if is_async else drive_sync(gen, start)

    return wrapper


class _ToolWrapper(wrapt.FunctionWrapper):  # type: ignore[misc]
    """A tool: a transparent wrapper (name, signature, docstring, kind) that knows its ``ToolInfo``."""

    def __init__(self, wrapped: Any, info: ToolInfo) -> None:
        func = getattr(wrapped, "__func__", wrapped)
        if inspect.isasyncgenfunction(func):
            wrapper = _generator_wrapper(info, True)
        elif inspect.isgeneratorfunction(func):
            wrapper = _generator_wrapper(info, False)
        elif inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(getattr(func, "__call__", None)):
            wrapper = _async_wrapper(info)
        else:
            wrapper = _sync_wrapper(info)
        super().__init__(wrapped, wrapper)
        self._self_toolspan_info = info


def tool_info(fn: Any) -> ToolInfo | None:
    """The ``ToolInfo`` of a tool made by ``@tool``/``wrap`` (bound or not), else ``None``."""
    if isinstance(fn, _ToolWrapper):
        return fn._self_toolspan_info  # type: ignore[no-any-return]
    if isinstance(fn, wrapt.BoundFunctionWrapper):
        parent = getattr(fn, "_self_parent", None)
        if isinstance(parent, _ToolWrapper):
            return parent._self_toolspan_info  # type: ignore[no-any-return]
    return None


def _make(
    fn: Any,
    name: str | None,
    description: str | None,
    tool_type: str | None,
    tracer_provider: trace_api.TracerProvider | None,
) -> Any:
    if not callable(fn) and not isinstance(fn, (classmethod, staticmethod)):
        raise TypeError(f"toolspan.tool needs a callable, got {fn!r:.80}")
    existing = tool_info(fn)
    if existing is not None:
        if (
            (name is None or name == existing.name)
            and (description is None or description == existing.description)
            and (tool_type is None or tool_type == existing.tool_type)
            and (tracer_provider is None or tracer_provider is existing.tracer_provider)
        ):
            return fn
        base = existing.func
        name = name or existing.name
        description = description if description is not None else existing.description
        tool_type = tool_type or existing.tool_type
        tracer_provider = tracer_provider or existing.tracer_provider
    else:
        base = fn
    if name is None:
        func = getattr(base, "__func__", base)
        name = getattr(func, "__name__", None) or type(func).__name__
    if description is None:
        description = _description(base)
    info = ToolInfo(base, name, description, tool_type or semconv.TOOL_TYPE_FUNCTION, tracer_provider)
    return _ToolWrapper(base, info)


@overload
def tool(fn: F, /) -> F: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    tool_type: str = semconv.TOOL_TYPE_FUNCTION,
    tracer_provider: trace_api.TracerProvider | None = None,
) -> Callable[[F], F]: ...
def tool(
    fn: Any = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    tool_type: str = semconv.TOOL_TYPE_FUNCTION,
    tracer_provider: trace_api.TracerProvider | None = None,
) -> Any:
    """Make every call of the decorated function an ``execute_tool {name}`` span.

    ``name`` defaults to the function's name, ``description`` to the first paragraph of its
    docstring. Works on functions, coroutines, generators, async generators, methods, classmethods
    and staticmethods; the decorated function keeps its name, signature, docstring and kind.
    """
    if fn is not None:
        return _make(fn, name, description, tool_type, tracer_provider)

    def decorate(f: F) -> F:
        return _make(f, name, description, tool_type, tracer_provider)  # type: ignore[no-any-return]

    return decorate


def wrap(
    fn: F,
    *,
    name: str | None = None,
    description: str | None = None,
    tool_type: str | None = None,
    tracer_provider: trace_api.TracerProvider | None = None,
) -> F:
    """Instrument an existing callable as a tool (returns it unchanged if it already is one)."""
    return _make(fn, name, description, tool_type, tracer_provider)  # type: ignore[no-any-return]


RegistryT = TypeVar("RegistryT", Mapping[str, Callable[..., Any]], list[Callable[..., Any]], tuple[Callable[..., Any], ...])


def wrap_tools(registry: RegistryT, *, tracer_provider: trace_api.TracerProvider | None = None) -> RegistryT:
    """A new registry of the same type with every entry instrumented; ``registry`` is left untouched.

    A dict's keys name its tools; entries that already are tools are kept as they are.
    """
    if isinstance(registry, Mapping):
        items = [
            (key, fn if tool_info(fn) is not None else wrap(fn, name=key if isinstance(key, str) else None, tracer_provider=tracer_provider))
            for key, fn in registry.items()
        ]
        try:
            return type(registry)(items)  # type: ignore[call-arg]
        except TypeError:
            return dict(items)  # type: ignore[return-value]
    if isinstance(registry, (list, tuple)):
        wrapped = [fn if tool_info(fn) is not None else wrap(fn, tracer_provider=tracer_provider) for fn in registry]
        return type(registry)(wrapped)
    raise TypeError(f"wrap_tools needs a dict or a list of callables, got {type(registry).__name__}")


# -- approvals ---------------------------------------------------------------------------------------


def _tool_span() -> trace_api.Span:
    frame = current_tool()
    return frame.span if frame is not None else trace_api.get_current_span()


def record_permission_required(note: str | None = None) -> None:
    """Record on the running tool's span that the call waits for a permission decision."""
    try:
        span = _tool_span()
        if span.is_recording():
            attrs = {} if note is None else {semconv.PERMISSION_NOTE: str(note)}
            span.add_event(semconv.PERMISSION_REQUIRED_EVENT, attrs)
    except Exception:
        _logger.warning("toolspan: could not record permission_required", exc_info=True)


def record_permission_decided(decision: str | bool, note: str | None = None) -> None:
    """Record on the running tool's span the decision: ``"allow"``/``True`` or ``"deny"``/``False``.

    To refuse the call, raise ``toolspan.ToolDenied(note)`` afterwards (state DENIED).
    """
    verdict = _DECISIONS.get(decision) if isinstance(decision, (str, bool)) else None
    if verdict is None:
        raise ValueError(f"decision must be 'allow', 'deny', True or False, got {decision!r}")
    try:
        span = _tool_span()
        if span.is_recording():
            attrs = {semconv.PERMISSION_DECISION: verdict}
            if note is not None:
                attrs[semconv.PERMISSION_NOTE] = str(note)
            span.add_event(semconv.PERMISSION_DECIDED_EVENT, attrs)
    except Exception:
        _logger.warning("toolspan: could not record permission_decided", exc_info=True)
