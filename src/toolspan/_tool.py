"""``@tool``, ``wrap`` and ``wrap_tools``: every call of a tool becomes an ``execute_tool {name}`` span.

Everything that does not change between calls (names, description, parameter layout, the start
attribute template, the wrapper for the function's kind) is computed once, at decoration; the
per-call lifecycle lives in ``_toolrun``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, overload

from opentelemetry import trace as trace_api

from toolspan import semconv
from toolspan._context import tool_call_id
from toolspan._intercept import ACTIVE as REPLAYING
from toolspan._otel_internals import tracing_on
from toolspan._outcome import ToolDenied
from toolspan._permissions import record_permission_decided, record_permission_required
from toolspan._toolrun import ToolInfo, wrapper_for
from toolspan._wrappers import PicklableBound, PicklableWrapper, Rebuild

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
    return tracing_on() or REPLAYING[0] > 0


class _ToolWrapper(PicklableWrapper):
    """A tool: a transparent wrapper (name, signature, docstring, kind) that knows its ``ToolInfo``.

    A tool on the global provider is switched off (wrapt's ``enabled``) while no provider is installed,
    so it costs a plain call plus one check; a tool given its own ``tracer_provider=`` is always on.
    It pickles and copies like what it wraps (see ``_wrappers``).
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
    """The ``ToolInfo`` of a tool made by ``@tool``/``wrap`` (bound or not), else ``None``."""
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
                else wrap(fn, name=key if isinstance(key, str) else None, tracer_provider=tracer_provider),
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
            fn if tool_info(fn) is not None else wrap(fn, tracer_provider=tracer_provider) for fn in source
        ]
        seq_kind: Any = type(source)
        return seq_kind(wrapped)  # type: ignore[no-any-return]
    raise TypeError(f"wrap_tools needs a dict or a list of callables, got {type(source).__name__}")
