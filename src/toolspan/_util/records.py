"""Frozen dataclasses that are quick to make (``quick_init``).

A ``@dataclass(frozen=True)`` sets each field in its ``__init__`` through ``object.__setattr__``, looked up
and called by name, since its own ``__setattr__`` refuses. toolspan makes one ``Span`` for each span it
reads and a few tool-call records for each tool call a view shows, so that cost counts: ``quick_init`` gives
such a class (with ``slots=True``) an ``__init__`` that sets each slot through its descriptor instead,
in about half the time. It takes the same arguments with the same defaults; the instances are the same,
still frozen, equal to and hashed like those the dataclass ``__init__`` made. ``quick_replace`` is
``dataclasses.replace`` for such a class, the same way (a view copies each tool call it links).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final, TypeVar

__all__ = ["quick_init", "quick_replace"]

T = TypeVar("T")


class _Factory:
    """The default of a field made by its ``default_factory`` (shown as dataclasses show it)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY: Final = _Factory()


def quick_init(cls: type[T]) -> type[T]:
    """Give the frozen, slotted dataclass ``cls`` a quicker ``__init__`` (see the module docstring).

    Only a class whose fields are all plain ``__init__`` arguments (no ``init=False``, no keyword-only, no
    ``__post_init__``) is taken; anything else raises ``TypeError`` when the class is defined."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"quick_init: {cls.__name__} is not a frozen dataclass with slots")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"quick_init: {cls.__name__} has a __post_init__")
    scope: dict[str, Any] = {"_FACTORY": _FACTORY}
    args: list[str] = []
    body: list[str] = []
    for n, field in enumerate(dataclasses.fields(cls)):  # type: ignore[arg-type]
        if not field.init or field.kw_only is True:
            raise TypeError(f"quick_init: {cls.__name__}.{field.name} is not a plain argument")
        name = field.name
        if field.default is not dataclasses.MISSING:
            scope[f"_default{n}"] = field.default
            args.append(f"{name}=_default{n}")
        elif field.default_factory is not dataclasses.MISSING:
            scope[f"_factory{n}"] = field.default_factory
            args.append(f"{name}=_FACTORY")
            body.append(f"    if {name} is _FACTORY:\n        {name} = _factory{n}()")
        else:
            args.append(name)
        scope[f"_set{n}"] = cls.__dict__[name].__set__  # the slot's member descriptor
        body.append(f"    _set{n}(self, {name})")
    source = f"def __init__(self, {', '.join(args)}) -> None:\n" + "\n".join(body or ["    pass"]) + "\n"
    # ``quick_replace``: each slot of a new instance set from the one copied, then the changed ones.
    names = [field.name for field in dataclasses.fields(cls)]  # type: ignore[arg-type]
    scope.update(
        _cls=cls, _new=object.__new__, _setters={name: scope[f"_set{n}"] for n, name in enumerate(names)}
    )
    copied = "".join(f"    _set{n}(new, old.{name})\n" for n, name in enumerate(names))
    source += (
        "def _quick_replace(old, changes):\n"
        "    new = _new(_cls)\n" + copied + "    for name, value in changes.items():\n"
        "        setter = _setters.get(name)\n"
        "        if setter is None:\n"
        "            raise TypeError(f'{_cls.__name__} has no field {name!r}')\n"
        "        setter(new, value)\n"
        "    return new\n"
    )
    exec(source, scope)  # code made from the field names, as dataclasses makes its own __init__
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    type.__setattr__(cls, "__init__", init)
    type.__setattr__(cls, "_quick_replace", scope["_quick_replace"])
    return cls


def quick_replace(obj: T, /, **changes: Any) -> T:
    """``dataclasses.replace(obj, **changes)`` for an instance of a class given ``quick_init``: a new
    instance with the fields ``changes`` names, the others ``obj``'s (``TypeError`` for a field it lacks)."""
    try:
        replace = type(obj)._quick_replace  # type: ignore[attr-defined]
    except AttributeError:
        raise TypeError(f"quick_replace: {type(obj).__name__} was not given quick_init") from None
    result: T = replace(obj, changes)
    return result
