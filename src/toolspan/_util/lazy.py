"""Package namespaces whose names load on first use (PEP 562), one way for every package of toolspan.

    __getattr__, __dir__ = lazy(globals(), {"name": "toolspan.module", "alias": ("toolspan.m", "real")})

A name maps to the module that defines it, or to ``(module, attribute)`` when it is exported under another
name. The first lookup imports the module and keeps the value in the package's namespace, so later lookups
are plain attribute reads; importing the package itself loads nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy"]


def lazy(
    namespace: dict[str, Any], where: Mapping[str, str | tuple[str, str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the package whose globals are ``namespace``."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        found = where.get(name)
        if found is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = found if isinstance(found, tuple) else (found, name)
        value = getattr(importlib.import_module(module), attribute)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
