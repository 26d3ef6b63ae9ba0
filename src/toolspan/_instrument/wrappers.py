"""The wrapt wrappers of tools, agents and plans: copied and pickled like what they wrap.

A wrapt proxy refuses ``pickle`` and ``copy`` by default, so a decorated tool could not be sent to a
``ProcessPoolExecutor``, ``multiprocessing`` or a framework's workers, even with tracing off. Here:

- a decorated function reachable under its module and qualified name (a module-level function, a
  class attribute) pickles *by reference*, as the function itself does: the worker imports it, and
  gets the decorated one;
- a method bound to an instance or a class pickles as ``getattr(instance_or_class, name)``, as a
  bound method does;
- anything else (a wrapped callable object, a ``functools.partial``, a function decorated under
  another name) pickles *by value*: what it wraps, and how to decorate it again. What cannot cross a
  process (an explicit ``tracer_provider``, a ``context``) is left behind: the copy reports to the
  worker's global provider. A local function or lambda fails as it does undecorated.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import wrapt

__all__ = ["PicklableBound", "PicklableWrapper"]

if TYPE_CHECKING:
    _Function = wrapt.FunctionWrapper[..., Any]
    _Bound = wrapt.BoundFunctionWrapper[..., Any]
else:
    _Function = wrapt.FunctionWrapper
    _Bound = wrapt.BoundFunctionWrapper

Rebuild = tuple[Callable[..., Any], tuple[Any, ...]]


def _lookup(module_name: Any, qualname: Any) -> Any:
    """The object named ``qualname`` in the already imported module ``module_name``, else None."""
    module = sys.modules.get(module_name) if isinstance(module_name, str) else None
    if module is None or not isinstance(qualname, str) or "<locals>" in qualname:
        return None
    found: Any = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
        if found is None:
            return None
    return found


class _Copyable:
    """``copy``/``deepcopy`` through the pickling rules (by reference: the object itself)."""

    def __reduce_ex__(self, protocol: Any) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def __copy__(self) -> Any:
        reduced = self.__reduce_ex__(4)
        return self if isinstance(reduced, str) else reduced[0](*reduced[1])

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        reduced = self.__reduce_ex__(4)
        return self if isinstance(reduced, str) else reduced[0](*copy.deepcopy(reduced[1], memo))


class PicklableBound(_Copyable, _Bound):
    """A decorated method bound to an instance (or accessed on its class)."""

    def __reduce_ex__(self, protocol: Any) -> Any:
        parent = self._self_parent
        func = getattr(parent.__wrapped__, "__func__", parent.__wrapped__)
        holder = self._self_instance if self._self_instance is not None else self._self_owner
        return getattr, (holder, func.__name__)

    def __reduce__(self) -> Any:
        return self.__reduce_ex__(2)


class PicklableWrapper(_Copyable, _Function):
    """A decorated function; subclasses say how to decorate again in ``_self_rebuild``."""

    __bound_function_wrapper__ = PicklableBound

    def _self_rebuild(self) -> Rebuild:
        raise NotImplementedError

    def __reduce_ex__(self, protocol: Any) -> Any:
        wrapped = self.__wrapped__
        func = getattr(wrapped, "__func__", wrapped)
        qualname = getattr(func, "__qualname__", None)
        if _lookup(getattr(func, "__module__", None), qualname) is self:
            return qualname  # by reference: the worker imports the decorated function
        return self._self_rebuild()

    def __reduce__(self) -> Any:
        return self.__reduce_ex__(2)
