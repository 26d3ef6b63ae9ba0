"""One exception base for everything toolspan raises: every exception class of the package is a
``toolspan.errors.ToolspanError`` and keeps the builtin base its meaning has (``except ValueError`` still
catches a bad policy, a bad pattern or unreadable input); every exception of the public API is defined in
``toolspan.errors`` and only re-exported elsewhere."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import toolspan
from toolspan import errors


def _modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(toolspan.__path__, "toolspan.")]
    return ["toolspan", *sorted(n for n in names if n != "toolspan.__main__")]


def _exceptions(module: str) -> list[type[BaseException]]:
    loaded = importlib.import_module(module)
    return [
        cls
        for _, cls in inspect.getmembers(loaded, inspect.isclass)
        if issubclass(cls, BaseException) and cls.__module__ == module
    ]


def test_every_exception_of_toolspan_is_a_toolspan_error() -> None:
    defined = {
        f"{cls.__module__}.{cls.__qualname__}": cls for module in _modules() for cls in _exceptions(module)
    }
    assert len(defined) >= 20  # the walk found them: the public ones and the private ones
    assert [name for name, cls in defined.items() if not issubclass(cls, errors.ToolspanError)] == []


def test_the_public_api_raises_exceptions_defined_in_toolspan_errors() -> None:
    exported = {}
    for module in _modules():
        if any(part.startswith("_") for part in module.split(".")):
            continue
        loaded = importlib.import_module(module)
        for name in getattr(loaded, "__all__", ()):
            value = getattr(loaded, name)
            if inspect.isclass(value) and issubclass(value, BaseException):
                exported[f"{module}.{name}"] = value
    assert set(exported) >= {
        "toolspan.bridge.BridgeReadError",
        "toolspan.bridge.readers.BridgeReadError",
        "toolspan.policy.PatternError",
        "toolspan.policy.PolicyError",
        "toolspan.backends.BackendError",
        "toolspan.ToolDenied",
    }
    assert {k: v for k, v in exported.items() if v is not getattr(errors, v.__name__, None)} == {}
    assert set(errors.__all__) >= {v.__name__ for v in exported.values()}


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (errors.BridgeReadError, ValueError),
        (errors.PatternError, ValueError),
        (errors.PolicyError, ValueError),
        (errors.InvalidArgumentsError, ValueError),
        (errors.ToolNotFoundError, LookupError),
        (errors.UnsupportedToolCallError, TypeError),
    ],
)
def test_each_keeps_its_builtin_base(error: type[Exception], builtin: type[Exception]) -> None:
    assert issubclass(error, errors.ToolspanError)
    with pytest.raises(builtin):
        raise error("no")


def test_a_replayed_builtin_failure_is_both_a_toolspan_error_and_the_builtin() -> None:
    from toolspan._decisions.replay import replayed_error

    replayed = replayed_error("KeyError", "'sku-1'", "exec_00000000000000a1")
    assert isinstance(replayed, KeyError)
    assert isinstance(replayed, errors.ReplayedToolError)
    assert isinstance(replayed, errors.ToolspanError)
