"""The arguments of a call as a name -> value mapping, without ``inspect.Signature.bind`` per call.

The parameter layout of a function is read once (``Parameters.of``); ``bind`` then builds the mapping
with a zip and a dict update. The mapping holds what the caller passed (positional arguments under
their parameter names, then keyword arguments, extra ``**kwargs`` flattened in), then the defaults
of the parameters not passed; extra positional arguments of a ``*args`` parameter are a list under
its name. ``self``/``cls`` are never included.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["Parameters", "first_str_argument"]

_RECEIVERS = frozenset({"self", "cls"})
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class Parameters:
    """The parameter layout of one function, computed once."""

    __slots__ = ("bound_names", "defaults", "has_receiver", "names", "static", "var_positional")

    def __init__(
        self,
        names: tuple[str, ...],
        var_positional: str | None,
        defaults: tuple[tuple[str, Any], ...],
        has_receiver: bool,
        static: bool,
    ) -> None:
        self.names = names
        self.bound_names = names[1:] if has_receiver else names
        self.var_positional = var_positional
        self.defaults = defaults
        self.has_receiver = has_receiver
        self.static = static

    @classmethod
    def of(cls, obj: Any) -> Parameters:
        """Read the layout of ``obj`` (a function, method, classmethod/staticmethod object or callable)."""
        static = isinstance(obj, staticmethod)
        func = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError):
            return cls((), "args", (), False, static)
        names: list[str] = []
        var_positional: str | None = None
        defaults: list[tuple[str, Any]] = []
        for param in signature.parameters.values():
            if param.kind in _POSITIONAL:
                names.append(param.name)
            elif param.kind is inspect.Parameter.VAR_POSITIONAL:
                var_positional = param.name
            if param.default is not inspect.Parameter.empty:
                defaults.append((param.name, param.default))
        # A receiver (self/cls) exists for classmethods and plain functions (which wrapt binds as
        # methods), not for staticmethods, bound methods or other callables.
        has_receiver = bool(names) and (
            isinstance(obj, classmethod) or (inspect.isfunction(func) and not static)
        )
        return cls(tuple(names), var_positional, tuple(defaults), has_receiver, static)

    def bind(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The arguments of one call (``instance``/``args``/``kwargs`` as wrapt gives them)."""
        if instance is not None and self.has_receiver:
            names = self.bound_names
        elif args and self.has_receiver and self.names[0] in _RECEIVERS:
            names, args = self.bound_names, args[1:]  # called unbound with its receiver first
        else:
            names = self.names
        out = dict(zip(names, args, strict=False)) if args else {}
        if len(args) > len(names):
            out[self.var_positional or "args"] = list(args[len(names) :])
        if kwargs:
            out.update(kwargs)
        for name, default in self.defaults:
            if name not in out:
                out[name] = default
        return out


def first_str_argument(spec: Parameters, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The ``messages`` argument when it is a list, else the first positional string argument."""
    messages = kwargs.get("messages")
    if isinstance(messages, list):
        return messages
    bound = spec.bind(instance, args, kwargs)
    messages = bound.get("messages")
    if isinstance(messages, list):
        return messages
    for value in bound.values():
        if isinstance(value, str):
            return value
    return None
