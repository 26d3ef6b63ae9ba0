"""The tool span: ``@tool`` (or ``tool(fn)``) and ``wrap_tools``, and the life of one call of a tool as an
``execute_tool {name}`` span.

Everything that does not change between calls (names, description, parameter layout, the start attribute
template per conventions setting, the wrapper for the function's kind) is computed once, at decoration.
Per call:

- no SDK tracer provider installed (and no ``tracer_provider=``), or instrumentation suppressed
  (OpenTelemetry's ``suppress_instrumentation``): the call goes straight through;
- while anything decides calls (``hooks.ACTIVE``: a policy, an approver, a replay), the body goes behind the
  decision chain the layer above registered (``hooks.DECIDER``); recording stays here;
- otherwise the span starts with the static attributes of the configured conventions (GenAI,
  OpenInference or both: ``Config.conventions``), ``gen_ai.tool.call.id`` when a model id was
  handed over, and the arguments (all visible to ``SpanProcessor.on_start``). When the SDK will surely
  record the span (its default sampler with a sampled parent or none, or ``ALWAYS_ON``), the arguments
  are serialized before ``start_span``; under any other sampler only when the SDK reads the start
  attributes, which it does only for a span it records, so a sampled-out call serializes nothing. With
  both conventions, OpenInference's repeats of GenAI attributes (``openinference.span.kind``,
  ``tool.name``, ``tool.description``, ``input.value``, ``input.mime_type``) are not start attributes:
  the SDK validates each start attribute, and they say nothing the GenAI ones do not;
- the ids, state, result and those repeats are set at the end, in one ``set_attributes`` call (the ids are
  in the context from the start, for ``current_execution_id()`` and child spans).
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar, overload

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.context import Context

from toolspan import semconv
from toolspan._capture import serialize as _serialize
from toolspan._instrument.context import (
    PENDING_CALL_ID_KEY,
    PLAIN_SUPPRESS_KEY,
    SUPPRESS_KEY,
    TOOL_KEY,
    Handoff,
    ToolFrame,
    suppressed,
    take_pending_call_id,
    tool_call_id,
)
from toolspan._instrument.generators import drive_async, drive_sync
from toolspan._instrument.hooks import ACTIVE as DECIDING
from toolspan._instrument.hooks import DECIDER
from toolspan._instrument.info import ToolInfo, template
from toolspan._instrument.outcome import ToolDenied, end_span, record_outcome
from toolspan._instrument.permissions import record_permission_decided, record_permission_required
from toolspan._instrument.tracer import get_tracer
from toolspan._instrument.wrappers import PicklableBound, PicklableWrapper, Rebuild
from toolspan._util import otel_internals as _otel_internals
from toolspan._util.ids import tool_ids
from toolspan._util.otel_internals import context_with, tracing_on
from toolspan.config import (
    CONVENTIONS_BOTH,
    CONVENTIONS_GENAI,
    CONVENTIONS_OPENINFERENCE,
    get_config,
)

__all__ = [
    "KEYS",
    "Keys",
    "StartAttributes",
    "ToolDenied",
    "ToolInfo",
    "record_permission_decided",
    "record_permission_required",
    "template",
    "tool",
    "tool_call_id",
    "tool_info",
    "wrap_tools",
    "wrapper_for",
]

_logger = logging.getLogger(__name__)

# --- attributes ----------------------------------------------------------------------------------------


class Keys:
    """The keys one conventions setting writes the call id, arguments and result under."""

    __slots__ = ("arguments", "call_id", "late_input", "mime", "result", "toolspan_ids")

    def __init__(self, genai: bool, openinference: bool) -> None:
        self.arguments = (
            *((semconv.GEN_AI_TOOL_CALL_ARGUMENTS,) if genai else ()),
            *((semconv.OI_INPUT_VALUE,) if openinference else ()),
        )
        # With both conventions, OpenInference's copy of the arguments (``input.value``, its MIME type)
        # repeats ``gen_ai.tool.call.arguments``: written with the ids at the end, not validated at start.
        self.late_input = genai and openinference
        self.result = (
            *((semconv.GEN_AI_TOOL_CALL_RESULT,) if genai else ()),
            *((semconv.OI_OUTPUT_VALUE,) if openinference else ()),
        )
        self.mime = openinference
        # toolspan's ids and the COMPLETED state: derivable from the span (``exec_``/``call_`` + span
        # id; no error), written with the OpenInference keys that UIs show, left out of lean GenAI spans.
        self.toolspan_ids = openinference
        # The model's id of the call; OpenInference alone has no GenAI key to hold it.
        self.call_id = semconv.GEN_AI_TOOL_CALL_ID if genai else semconv.OI_TOOL_CALL_ID


KEYS: dict[str, Keys] = {
    CONVENTIONS_GENAI: Keys(True, False),
    CONVENTIONS_OPENINFERENCE: Keys(False, True),
    CONVENTIONS_BOTH: Keys(True, True),
}


def add_arguments(attrs: dict[str, Any], pending: tuple[Any, ...], keys: Keys) -> dict[str, Any] | None:
    """Add the call's arguments, ``(info, instance, args, kwargs, config)``, to the start attributes
    ``attrs`` under ``keys``; return what is written with the ids at the end (``Keys.late_input``)."""
    info, instance, args, kwargs, config = pending
    try:
        bound = info.params.bind(instance, args, kwargs)
        text, exact = _serialize.dumps_exact(bound, config)
        if not exact:  # the copy may differ from the call: its digest tells calls apart (replay)
            attrs[semconv.TOOLSPAN_TOOL_CALL_ARGUMENTS_DIGEST] = _serialize.digest(
                _serialize.json_values(bound)
            )
    except Exception:
        _logger.warning("toolspan: could not record the arguments of %s", info.name, exc_info=True)
        return None
    if keys.late_input:
        attrs[semconv.GEN_AI_TOOL_CALL_ARGUMENTS] = text
        return {semconv.OI_INPUT_VALUE: text, semconv.OI_INPUT_MIME_TYPE: semconv.MIME_JSON}
    for key in keys.arguments:
        attrs[key] = text
    if keys.mime:
        attrs[semconv.OI_INPUT_MIME_TYPE] = semconv.MIME_JSON
    return None


class StartAttributes(dict[str, Any]):
    """The start attributes of a tool span; the arguments are added on the first read.

    The SDK reads the attributes given to ``start_span`` only when it records the span (samplers
    that drop a span do not look at them), so a dropped span never pays for serialization.
    """

    __slots__ = ("_keys", "_pending", "late")

    def __init__(self, base: dict[str, Any], pending: tuple[Any, ...] | None, keys: Keys) -> None:
        super().__init__(base)
        self._pending = pending
        self._keys = keys
        self.late: dict[str, Any] | None = None  # arguments written with the ids (``Keys.late_input``)

    def fill(self) -> None:
        pending = self._pending
        if pending is None:
            return
        self._pending = None
        self.late = add_arguments(self, pending, self._keys)

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


# --- one call ----------------------------------------------------------------------------------------

_new_frame = tuple.__new__


class _CallSpan:
    """One running tool call: its span and context (``_ItemsCallSpan``: and what a generator yielded)."""

    __slots__ = ("config", "ctx", "ids", "info", "keys", "span")

    # A plain call yields nothing: these are ``_ItemsCallSpan``'s slots, read-only defaults here.
    aggregate = False
    count = 0
    items: _serialize.Collector | None = None

    def __init__(  # noqa: PLR0917 - the hot path: no argument packing
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
        self.ids: dict[str, Any] | None = None
        config = self.config = get_config()
        keys = self.keys = KEYS[config.conventions]
        late: dict[str, Any] | None = None
        attrs: dict[str, Any]
        if not config.capture_content:
            attrs = info.templates[config.conventions].copy()
        elif _otel_internals.sure_to_record(tracer, parent):
            # The span will be recorded: the arguments now, in a plain dict (the SDK reads it without
            # calling back into toolspan).
            attrs = info.templates[config.conventions].copy()
            late = add_arguments(attrs, (info, instance, args, kwargs, config), keys)
        else:  # a sampler that may drop the span: the arguments only if the SDK reads them
            attrs = StartAttributes(
                info.templates[config.conventions], (info, instance, args, kwargs, config), keys
            )
        if call_id is not None:
            attrs[keys.call_id] = call_id
        span = self.span = tracer.start_span(info.span_name, context=parent, attributes=attrs)
        span_context = span.get_span_context()
        if not span_context.is_valid:
            self.ctx = trace_api.set_span_in_context(span, parent)
            return
        recording = span.is_recording()
        if not recording and span_context == trace_api.get_current_span(parent).get_span_context():
            # A tracer disabled by the SDK's configurator hands back the parent's span: this call has no
            # span of its own, so no ids of its own (the parent's would be taken for them).
            self.ctx = parent
            return
        span_id = span_context.span_id
        self.ctx = context_with(parent, span, TOOL_KEY, _new_frame(ToolFrame, (span, span_id, call_id)))
        if not recording:
            return
        ids: dict[str, Any]
        if keys.toolspan_ids:
            exec_id, own_call_id = tool_ids(span_id)
            ids = {
                semconv.TOOLSPAN_EXECUTION_ID: exec_id,
                semconv.TOOLSPAN_TOOL_CALL_ID: call_id or own_call_id,
            }
        else:
            ids = {}
        lazy = attrs if type(attrs) is StartAttributes else None
        if config.conventions == CONVENTIONS_BOTH:
            ids.update(info.late)
            if lazy is not None:
                late = lazy.late
            if late is not None:
                ids.update(late)
        if lazy is None or lazy.filled:
            if ids:
                self.ids = ids  # written with the end attributes
            return
        self._unread(lazy, ids, call_id)

    def _unread(self, attrs: StartAttributes, ids: dict[str, Any], call_id: str | None) -> None:
        """An SDK or sampler that did not read the start attributes: set them now, with the ids."""
        keys = self.keys
        attrs.fill()
        if attrs.late is not None:
            ids.update(attrs.late)
        if call_id is not None:
            ids[keys.call_id] = call_id
        for key in (*keys.arguments, semconv.OI_INPUT_MIME_TYPE, semconv.TOOLSPAN_TOOL_CALL_ARGUMENTS_DIGEST):
            if key in attrs:
                ids[key] = dict.__getitem__(attrs, key)
        if ids:
            self.span.set_attributes(ids)

    # -- endings ---------------------------------------------------------------------------------

    def ok(self, result: Any) -> None:
        span = self.span
        try:
            if span.is_recording():
                attrs: dict[str, Any] = self.ids or {}
                if self.keys.toolspan_ids:
                    attrs[semconv.TOOLSPAN_TOOL_STATE] = semconv.STATE_COMPLETED
                if self.aggregate:
                    attrs[semconv.TOOLSPAN_RESULT_ITEMS] = self.count
                config = self.config
                if config.capture_content:
                    try:
                        items = self.items
                        if items is not None:
                            text, exact = items.dumps(), not items.inexact
                        else:
                            text, lossy = _serialize.dumps_marked(result, config)
                            exact = not lossy
                        if not exact:  # the copy may differ from the result: replay never serves it
                            attrs[semconv.TOOLSPAN_TOOL_CALL_RESULT_INEXACT] = True
                    except Exception:
                        _logger.warning(
                            "toolspan: could not record the result of %s", self.info.name, exc_info=True
                        )
                    else:
                        keys = self.keys
                        for key in keys.result:
                            attrs[key] = text
                        if keys.mime:
                            attrs[semconv.OI_OUTPUT_MIME_TYPE] = semconv.MIME_JSON
                if attrs:
                    _otel_internals.set_attributes(span, attrs)
        except Exception:
            _logger.warning("toolspan: could not record the end of %s", self.info.name, exc_info=True)
        try:
            span.end()
        except Exception:
            _logger.warning("toolspan: could not end the span of %s", self.info.name, exc_info=True)

    def fail(self, exc: BaseException) -> None:
        self.write_ids()
        extra = {semconv.TOOLSPAN_RESULT_ITEMS: self.count} if self.aggregate else {}
        record_outcome(self.span, exc, tool=True, **extra)
        end_span(self.span)

    def write_ids(self) -> None:
        """Set the ids now (an ending other than ``ok``)."""
        ids = self.ids
        if ids is not None:
            self.ids = None
            try:
                self.span.set_attributes(ids)
            except Exception:
                _logger.warning("toolspan: could not record the ids of %s", self.info.name, exc_info=True)

    def closed(self) -> None:
        try:
            if self.span.is_recording():
                self.span.add_event(
                    semconv.GENERATOR_CLOSED_EVENT, {semconv.TOOLSPAN_RESULT_ITEMS: self.count}
                )
                items = self.items
                if items is not None:  # what it yielded before it was closed: replay yields it again
                    attrs: dict[str, Any] = dict.fromkeys(self.keys.result, items.dumps())
                    if self.keys.mime:
                        attrs[semconv.OI_OUTPUT_MIME_TYPE] = semconv.MIME_JSON
                    self.span.set_attributes(attrs)
        except Exception:
            _logger.warning("toolspan: could not record the early close of %s", self.info.name, exc_info=True)
        self.fail(GeneratorExit())


class _ItemsCallSpan(_CallSpan):
    """A generator tool's call: also counts (and, within the result budget, keeps) what it yields."""

    __slots__ = ("aggregate", "count", "items")

    def start_items(self) -> None:
        self.aggregate = True
        self.count = 0
        self.items = None
        if self.config.capture_content and self.span.is_recording():
            # Items are kept only as far as the result budget holds them: memory stays bounded.
            self.items = _serialize.Collector(self.config)

    def item(self, value: Any) -> None:
        self.count += 1
        if self.items is not None:
            self.items.add(value)


def _start(  # noqa: PLR0917 - the hot path: no argument packing
    info: ToolInfo,
    tracer: trace_api.Tracer,
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    call_id: str | None,
    parent: Context,
    kind: type[_CallSpan] = _CallSpan,
) -> _CallSpan | None:
    try:
        return kind(info, tracer, instance, args, kwargs, call_id, parent)
    except Exception:
        _logger.warning("toolspan: could not start the span of %s", info.name, exc_info=True)
        return None


def _sync_wrapper(info: ToolInfo) -> Callable[..., Any]:
    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if DECIDING[0]:
            wrapped = DECIDER[0](info, wrapped, instance, "sync")
        tracer = get_tracer(info.tracer_provider)
        if tracer is None:  # tracing is off: a plain call
            return wrapped(*args, **kwargs)
        parent = context_api.get_current()
        if parent.get(SUPPRESS_KEY) or parent.get(PLAIN_SUPPRESS_KEY):
            return wrapped(*args, **kwargs)  # instrumentation suppressed: a plain call
        handoff: Handoff | None = parent.get(PENDING_CALL_ID_KEY)  # type: ignore[assignment]
        try:
            run = _CallSpan(
                info, tracer, instance, args, kwargs, None if handoff is None else handoff.take(), parent
            )
        except Exception:
            _logger.warning("toolspan: could not start the span of %s", info.name, exc_info=True)
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
    async def run_async(  # noqa: PLR0917 - the hot path: no argument packing
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

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if DECIDING[0]:
            wrapped = DECIDER[0](info, wrapped, instance, "async")
        tracer = get_tracer(info.tracer_provider)
        if tracer is None or suppressed():
            return wrapped(*args, **kwargs)
        # The model's id is taken when the tool is called, the span starts when it is awaited.
        call_id = take_pending_call_id(context_api.get_current())
        return run_async(tracer, wrapped, instance, args, kwargs, call_id)

    return wrapper


def _generator_wrapper(info: ToolInfo, is_async: bool) -> Callable[..., Any]:
    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if DECIDING[0]:
            wrapped = DECIDER[0](info, wrapped, instance, "agen" if is_async else "gen")
        tracer = get_tracer(info.tracer_provider)
        if tracer is None or suppressed():
            return wrapped(*args, **kwargs)
        call_id = take_pending_call_id(context_api.get_current())
        gen = wrapped(*args, **kwargs)

        def start() -> _ItemsCallSpan:
            run = _start(
                info, tracer, instance, args, kwargs, call_id, context_api.get_current(), _ItemsCallSpan
            )
            if not isinstance(
                run, _ItemsCallSpan
            ):  # telemetry failed: iterate under a span that records nothing
                run = _ItemsCallSpan.__new__(_ItemsCallSpan)
                run.info, run.span, run.ids = info, trace_api.INVALID_SPAN, None
                run.ctx, run.config = context_api.get_current(), get_config()
                run.keys = KEYS[run.config.conventions]
            run.start_items()
            return run

        return drive_async(gen, start) if is_async else drive_sync(gen, start)

    return wrapper


def wrapper_for(info: ToolInfo, func: Any) -> Callable[..., Any]:
    """The wrapt wrapper for ``func``'s kind: plain, coroutine, generator or async generator."""
    if inspect.isasyncgenfunction(func):
        return _generator_wrapper(info, True)
    if inspect.isgeneratorfunction(func):
        return _generator_wrapper(info, False)
    if inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(type(func).__call__):
        return _async_wrapper(info)
    return _sync_wrapper(info)


# --- decoration ------------------------------------------------------------------------------------------

F = TypeVar("F", bound=Callable[..., Any])


def _underlying(obj: Any) -> Any:
    """The function that names and documents ``obj``: through classmethod/staticmethod and partials."""
    func = getattr(obj, "__func__", obj)
    while isinstance(func, functools.partial):
        func = func.func
    return func


def _description(obj: Any) -> str | None:
    """The first paragraph of the docstring, on one line."""
    doc = inspect.getdoc(_underlying(obj))
    if not doc:
        return None
    paragraph = doc.strip().split("\n\n", 1)[0]
    return " ".join(line.strip() for line in paragraph.splitlines()) or None


def _tracing_on() -> bool:
    """False until an application installs a tracer provider (or a replay or a policy guard is active):
    until then a tool calls straight through."""
    return tracing_on() or DECIDING[0] > 0


class _ToolWrapper(PicklableWrapper):
    """A tool: a transparent wrapper (name, signature, docstring, kind) that knows its ``ToolInfo``.

    A tool on the global provider is switched off (wrapt's ``enabled``) while no provider is installed,
    so it costs a plain call plus one check; a tool given its own ``tracer_provider=`` is always on.
    It pickles and copies like what it wraps (see ``wrappers``).
    """

    def __init__(self, wrapped: Any, info: ToolInfo) -> None:
        super().__init__(
            wrapped,
            wrapper_for(info, getattr(wrapped, "__func__", wrapped)),
            enabled=_tracing_on if info.tracer_provider is None else None,
        )
        self._self_toolspan_info = info

    def _self_rebuild(self) -> Rebuild:
        info = self._self_toolspan_info
        return _rebuild_tool, (self.__wrapped__, info.name, info.description, info.tool_type)


def _rebuild_tool(fn: Any, name: str, description: str | None, tool_type: str) -> Any:
    """A tool unpickled by value: ``fn`` decorated again (on the global provider)."""
    return _make(fn, name, description, tool_type, None)


def tool_info(fn: Any) -> ToolInfo | None:
    """The ``ToolInfo`` of a tool made by ``tool`` (bound or not), else ``None``."""
    if isinstance(fn, _ToolWrapper):
        return fn._self_toolspan_info
    if isinstance(fn, PicklableBound):
        parent = getattr(fn, "_self_parent", None)
        if isinstance(parent, _ToolWrapper):
            return parent._self_toolspan_info
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
        func = _underlying(base)
        name = getattr(func, "__name__", None) or type(func).__name__
    if description is None:
        description = _description(base)
    info = ToolInfo(base, name, description, tool_type or semconv.TOOL_TYPE_FUNCTION, tracer_provider)
    return _ToolWrapper(base, info)


@overload
def tool(
    fn: F,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    tool_type: str | None = None,
    tracer_provider: trace_api.TracerProvider | None = None,
) -> F: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    tool_type: str | None = None,
    tracer_provider: trace_api.TracerProvider | None = None,
) -> Callable[[F], F]: ...
def tool(
    fn: Any = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    tool_type: str | None = None,
    tracer_provider: trace_api.TracerProvider | None = None,
) -> Any:
    """Make every call of a function an ``execute_tool {name}`` span: as a decorator (``@tool``,
    ``@tool(name=...)``) or called on an existing callable (``tool(fn, name=...)``: a bound method, a
    callable object, a partial, a function of another library).

    ``name`` defaults to the function's name, ``description`` to the first paragraph of its docstring,
    ``tool_type`` to ``"function"``. Works on functions, coroutines, generators, async generators, methods,
    classmethods and staticmethods; the tool keeps the name, signature, docstring and kind of what it wraps.
    A tool given again is returned as it is (unless asked for another name, description, type or provider).
    """
    if fn is not None:
        return _make(fn, name, description, tool_type, tracer_provider)

    def decorate(f: F) -> F:
        return _make(f, name, description, tool_type, tracer_provider)  # type: ignore[no-any-return]

    return decorate


RegistryT = TypeVar("RegistryT", bound="Mapping[str, Any] | Sequence[Any]")


def wrap_tools(registry: RegistryT, *, tracer_provider: trace_api.TracerProvider | None = None) -> RegistryT:
    """A new registry of the same type with every entry instrumented; ``registry`` is left untouched.

    A dict's keys name its tools; entries that already are tools are kept as they are.
    """
    source: Any = registry
    if isinstance(source, Mapping):
        items = [
            (
                key,
                fn
                if tool_info(fn) is not None
                else tool(fn, name=key if isinstance(key, str) else None, tracer_provider=tracer_provider),
            )
            for key, fn in source.items()
        ]
        try:
            kind: Any = type(source)
            made = kind(items)
            return made  # type: ignore[no-any-return]
        except TypeError:
            return dict(items)  # type: ignore[return-value]
    if isinstance(source, (list, tuple)):
        wrapped = [
            fn if tool_info(fn) is not None else tool(fn, tracer_provider=tracer_provider) for fn in source
        ]
        seq_kind: Any = type(source)
        return seq_kind(wrapped)  # type: ignore[no-any-return]
    raise TypeError(f"wrap_tools needs a dict or a list of callables, got {type(source).__name__}")
