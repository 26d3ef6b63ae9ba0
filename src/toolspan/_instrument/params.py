"""The arguments of a call as a name -> value mapping, without ``inspect.Signature.bind`` per call.

The parameter layout of a function is read once (``Parameters.of``); ``bind`` then builds the mapping
with a zip and a dict update. The mapping holds what the caller passed (positional arguments under
their parameter names, then keyword arguments, extra ``**kwargs`` flattened in, except a keyword named like
a positional-only parameter, which goes under the ``**kwargs`` name: it never stands for that parameter),
then the defaults of the parameters not passed; extra positional arguments of a ``*args`` parameter are a
list under its name. The receiver of a method (``self``/``cls``) is never included; a function defined
outside a class has none, whatever its first parameter is named.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import logging
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = ["Parameters", "first_str_argument", "json_schema"]

_logger = logging.getLogger(__name__)
_SCALARS: Final[dict[Any, dict[str, Any]]] = {
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    str: {"type": "string"},
    type(None): {"type": "null"},
    None: {"type": "null"},
}
_MAX_TYPE_DEPTH: Final = 16

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class Parameters:
    """The parameter layout of one function, computed once."""

    __slots__ = (
        "_schema",
        "bound_names",
        "defaults",
        "func",
        "has_receiver",
        "method",
        "names",
        "positional_only",
        "static",
        "var_keyword",
        "var_positional",
    )

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
        self.func: Any = None
        self._schema: dict[bool, str] = {}
        # Defined in a class (its qualified name says so) with a first parameter named ``self``/``cls``:
        # called through the class, its receiver comes first among the arguments. A function ``f(cls, x)``
        # outside a class has no receiver (``cls`` is an argument like any other).
        self.method = False
        self.positional_only: frozenset[str] = frozenset()
        self.var_keyword: str | None = None

    def schema(self, bound: bool) -> str:
        """The JSON Schema (text) of the arguments a call binds (``bind``; ``bound``: the call has its
        receiver, ``instance``, apart), computed once: what a decider's edit of the arguments must fit
        (``toolspan.tool.parameters``)."""
        found = self._schema.get(bound)
        if found is None:
            try:
                schema = json_schema(self.func, bound and self.has_receiver)
            except Exception:  # an annotation that cannot be read: any value, for each parameter
                _logger.debug("toolspan: could not read the parameter types of %r", self.func, exc_info=True)
                schema = {"type": "object"}
            found = self._schema[bound] = json.dumps(schema, separators=(",", ":"), sort_keys=True)
        return found

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
        var_keyword: str | None = None
        positional_only: set[str] = set()
        defaults: list[tuple[str, Any]] = []
        for param in signature.parameters.values():
            if param.kind in _POSITIONAL:
                names.append(param.name)
                if param.kind is inspect.Parameter.POSITIONAL_ONLY:
                    positional_only.add(param.name)
            elif param.kind is inspect.Parameter.VAR_POSITIONAL:
                var_positional = param.name
            elif param.kind is inspect.Parameter.VAR_KEYWORD:
                var_keyword = param.name
            if param.default is not inspect.Parameter.empty:
                defaults.append((param.name, param.default))
        # A receiver (self/cls) exists for classmethods and plain functions (which wrapt binds as
        # methods), not for staticmethods, bound methods or other callables.
        has_receiver = bool(names) and (
            isinstance(obj, classmethod) or (inspect.isfunction(func) and not static)
        )
        params = cls(tuple(names), var_positional, tuple(defaults), has_receiver, static)
        params.func = func
        qualname = getattr(func, "__qualname__", "")
        parent = qualname.rsplit(".", 2)[-2] if qualname.count(".") >= 1 else ""
        params.method = has_receiver and parent not in ("", "<locals>") and names[0] in ("self", "cls")
        params.positional_only = frozenset(positional_only)
        params.var_keyword = var_keyword
        return params

    def bind(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The arguments of one call (``instance``/``args``/``kwargs`` as wrapt gives them)."""
        if instance is not None and self.has_receiver:
            names = self.bound_names
        elif args and self.method:
            names, args = self.bound_names, args[1:]  # a method called through its class, receiver first
        else:
            names = self.names
        out = dict(zip(names, args, strict=False)) if args else {}
        if len(args) > len(names):
            out[self.var_positional or "args"] = list(args[len(names) :])
        if kwargs:
            clash = self.positional_only.intersection(kwargs)
            if clash:
                # ``f(a, /, **kw)`` called ``f(1, a=2)``: ``a`` is 1, and 2 goes to ``kw``: never over ``a``.
                kwargs = dict(kwargs)
                out[self.var_keyword or "kwargs"] = {k: kwargs.pop(k) for k in sorted(clash)}
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


def _type_schema(hint: Any, depth: int = 0) -> dict[str, Any]:
    """The JSON Schema of one annotation (``{}``, any value, for what JSON Schema cannot say)."""
    if depth > _MAX_TYPE_DEPTH or hint is Any or hint is object or hint is inspect.Parameter.empty:
        return {}
    if hint in _SCALARS:
        return dict(_SCALARS[hint])
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return _type_schema(args[0], depth + 1)
    if origin is typing.Literal:
        return {"enum": [a.value if isinstance(a, enum.Enum) else a for a in args]}
    if origin in (typing.Union, types.UnionType):
        options = [_type_schema(a, depth + 1) for a in args]
        return {} if {} in options else {"anyOf": options}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"enum": [m.value for m in hint]}
    if isinstance(hint, type) and hasattr(hint, "model_json_schema"):  # a pydantic model
        found = hint.model_json_schema()
        return dict(found) if isinstance(found, dict) else {"type": "object"}
    container = origin if origin is not None else hint
    if isinstance(container, type):
        if issubclass(container, (str, bytes)):
            return {"type": "string"}
        if issubclass(container, Mapping) or dataclasses.is_dataclass(container) or typing.is_typeddict(hint):
            out: dict[str, Any] = {"type": "object"}
            if origin is not None and len(args) == 2:
                out["additionalProperties"] = _type_schema(args[1], depth + 1)
            return out
        if issubclass(container, tuple) and args and args[-1] is not Ellipsis:
            return {
                "type": "array",
                "prefixItems": [_type_schema(a, depth + 1) for a in args],
                "minItems": len(args),
                "maxItems": len(args),
            }
        if issubclass(container, (Sequence, set, frozenset)):
            return {"type": "array", "items": _type_schema(args[0], depth + 1)} if args else {"type": "array"}
    return {}


def json_schema(func: Any, has_receiver: bool) -> dict[str, Any]:
    """The JSON Schema of the arguments of ``func`` as ``Parameters.bind`` names them: an object with a
    property per parameter (its annotation's schema), the ones without a default required, no other key
    unless the function takes ``**kwargs``."""
    signature = inspect.signature(func)
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception:  # forward references that do not resolve: the raw annotations, read as far as they go
        hints = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    extra = False
    params = list(signature.parameters.values())
    if has_receiver and params and params[0].kind in _POSITIONAL:
        params = params[1:]
    for param in params:
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            extra = True
            continue
        hint = hints.get(param.name, param.annotation)
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            properties[param.name] = {"type": "array", "items": _type_schema(hint)}
            continue
        properties[param.name] = _type_schema(hint)
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": extra}
    if required:
        schema["required"] = required
    return schema
