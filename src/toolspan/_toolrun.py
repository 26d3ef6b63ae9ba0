"""The per-call lifecycle of a tool span: start attributes, ids, result, outcome, and the wrappers
``@tool`` installs for each kind of function.

Per call:

- no SDK tracer provider installed (and no ``tracer_provider=``), or instrumentation suppressed
  (OpenTelemetry's ``suppress_instrumentation``): the call goes straight through;
- otherwise the span starts with the static attributes of the configured conventions (GenAI,
  OpenInference or both: ``Config.conventions``), ``gen_ai.tool.call.id`` when a model id was
  handed over, and the arguments (all visible to ``SpanProcessor.on_start``). The arguments are
  serialized lazily: only when the SDK reads the start attributes, which it does only for a span it
  records, so a sampled-out call serializes nothing;
- the ids, state and result are set at the end, in one ``set_attributes`` call (the ids are in the
  context from the start, for ``current_execution_id()`` and child spans).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.context import Context

from toolspan import _otel_internals, _serialize, semconv
from toolspan._context import (
    PENDING_CALL_ID_KEY,
    TOOL_KEY,
    Handoff,
    ToolFrame,
    suppressed,
    take_pending_call_id,
)
from toolspan._gen import drive_async, drive_sync
from toolspan._ids import tool_ids
from toolspan._intercept import ACTIVE as DECIDING
from toolspan._otel_internals import context_with
from toolspan._outcome import end_span, record_outcome
from toolspan._params import Parameters
from toolspan._tool_attributes import KEYS, StartAttributes, template
from toolspan._tracer import get_tracer
from toolspan.config import (
    CONVENTIONS,
    CONVENTIONS_BOTH,
    get_config,
)

_logger = logging.getLogger(__name__)

__all__ = ["ToolInfo", "wrapper_for"]

_new_frame = tuple.__new__


class ToolInfo:
    """What ``@tool`` computed once for a function."""

    __slots__ = (
        "base_attributes",
        "description",
        "func",
        "name",
        "params",
        "span_name",
        "templates",
        "tool_type",
        "tracer_provider",
    )

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
        self.params = Parameters.of(func)
        # The static start attributes per conventions setting (the setting may change after decoration).
        self.templates = {conv: template(name, description, tool_type, conv) for conv in CONVENTIONS}
        self.base_attributes = self.templates[CONVENTIONS_BOTH]


class _ToolRun:
    """One running tool call: its span, context and what a generator yielded so far."""

    __slots__ = ("aggregate", "config", "count", "ctx", "ids", "info", "items", "keys", "span")

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
        self.aggregate = False
        self.count = 0
        self.items: _serialize.Collector | None = None
        self.ids: dict[str, Any] | None = None
        config = self.config = get_config()
        keys = self.keys = KEYS[config.conventions]
        attrs = StartAttributes(
            info.templates[config.conventions],
            (info, instance, args, kwargs, config) if config.capture_content else None,
            keys,
        )
        if call_id is not None:
            dict.__setitem__(attrs, keys.call_id, call_id)
        span = self.span = tracer.start_span(info.span_name, context=parent, attributes=attrs)
        span_context = span.get_span_context()
        if not span_context.is_valid:
            self.ctx = trace_api.set_span_in_context(span, parent)
            return
        exec_id, own_call_id = tool_ids(span_context.span_id)
        frame = _new_frame(ToolFrame, (span, exec_id, call_id or own_call_id))
        self.ctx = context_with(parent, span, TOOL_KEY, frame)
        if not span.is_recording():
            return
        ids: dict[str, Any] = (
            {
                semconv.TOOLSPAN_EXECUTION_ID: frame.execution_id,
                semconv.TOOLSPAN_TOOL_CALL_ID: frame.tool_call_id,
            }
            if keys.toolspan_ids
            else {}
        )
        if attrs.filled:
            if ids:
                self.ids = ids  # written with the end attributes
            return
        # An SDK or sampler that did not read the start attributes: set them now.
        attrs.fill()
        if call_id is not None:
            ids[keys.call_id] = call_id
        for key in (*keys.arguments, semconv.OI_INPUT_MIME_TYPE, semconv.TOOLSPAN_TOOL_CALL_ARGUMENTS_DIGEST):
            if key in attrs:
                ids[key] = dict.__getitem__(attrs, key)
        if ids:
            span.set_attributes(ids)

    # -- generator aggregation -------------------------------------------------------------------

    def start_items(self) -> None:
        self.aggregate = True
        if self.config.capture_content and self.span.is_recording():
            # Items are kept only as far as the result budget holds them: memory stays bounded.
            self.items = _serialize.Collector(self.config)

    def item(self, value: Any) -> None:
        self.count += 1
        if self.items is not None:
            self.items.add(value)

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
                        text = items.dumps() if items is not None else _serialize.dumps(result, config)
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
        end_span(span)

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


def _start(  # noqa: PLR0917 - the hot path: no argument packing
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
    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if DECIDING[0]:
            wrapped = _chain().substitute(info, wrapped, instance, "sync")
        tracer = get_tracer(info.tracer_provider)
        if tracer is None:  # tracing is off: a plain call
            return wrapped(*args, **kwargs)
        parent = context_api.get_current()
        if suppressed(parent):
            return wrapped(*args, **kwargs)  # instrumentation suppressed: a plain call
        handoff: Handoff | None = parent.get(PENDING_CALL_ID_KEY)  # type: ignore[assignment]
        try:
            run = _ToolRun(
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
            wrapped = _chain().substitute(info, wrapped, instance, "async")
        tracer = get_tracer(info.tracer_provider)
        if tracer is None or suppressed():
            return wrapped(*args, **kwargs)
        # The model's id is taken when the tool is called, the span starts when it is awaited.
        call_id = take_pending_call_id(context_api.get_current())
        return run_async(tracer, wrapped, instance, args, kwargs, call_id)

    return wrapper


def _chain() -> Any:
    """The decision chain (``_chain``), loaded when something first decides a call."""
    from toolspan import _chain as chain

    return chain


def _generator_wrapper(info: ToolInfo, is_async: bool) -> Callable[..., Any]:
    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if DECIDING[0]:
            wrapped = _chain().substitute(info, wrapped, instance, "agen" if is_async else "gen")
        tracer = get_tracer(info.tracer_provider)
        if tracer is None or suppressed():
            return wrapped(*args, **kwargs)
        call_id = take_pending_call_id(context_api.get_current())
        gen = wrapped(*args, **kwargs)

        def start() -> _ToolRun:
            run = _start(info, tracer, instance, args, kwargs, call_id, context_api.get_current())
            if run is None:  # telemetry failed: iterate under a span that records nothing
                run = _ToolRun.__new__(_ToolRun)
                run.info, run.span, run.count, run.items = info, trace_api.INVALID_SPAN, 0, None
                run.aggregate, run.ids = False, None
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
