"""Attribute text of adversarial shapes, of any size: what a hostile or broken instrumentation can record in
an attribute the fact readers parse (a tool's arguments, MLflow's inputs, ``input.value``). Each shape is
made to cost a careless reader more than linear time or a deep recursion: brackets thousands deep, a string
of escaped quotes that never ends after 300 brackets (the issue 35 case), runs of backslashes, a number of a
million digits, a document of many keys, brackets and quotes inside strings, lone surrogate escapes, and a
Python literal (LangChain's ``input_str``) at its length limit. Used by the hostile tests and by
``benchmarks/bench_attribute.py``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

__all__ = ["MIB", "SHAPES", "shape"]

MIB: Final = 1 << 20


def _deep(n: int) -> str:
    return "[" * n


def _deep_closed(n: int) -> str:
    return "[" * (n // 2) + "]" * (n // 2)


def _unterminated_escaped_quotes(n: int) -> str:
    return "[" * 300 + '"' + '\\"' * ((n - 301) // 2)


def _quotes(n: int) -> str:
    return "[" + '"' * (n - 1)


def _backslashes(n: int) -> str:
    return '["' + "\\" * (n - 2)


def _huge_integer(n: int) -> str:
    return "[" + "9" * (n - 2) + "]"


def _huge_float(n: int) -> str:
    return "[1." + "9" * (n - 4) + "]"


def _many_keys(n: int) -> str:
    return "{" + ",".join(f'"k{i}":[{i}]' for i in range(n // 17)) + "}"


def _brackets_in_strings(n: int) -> str:
    return "[" * 300 + json.dumps("[{" * (n // 2))


def _surrogate_escapes(n: int) -> str:
    return '["' + "\\ud800" * (n // 6) + '"]'


def _python_literal(n: int) -> str:
    # LangChain's input_str: a dict's str(), at the literal reader's length limit (100,000 characters).
    return "{'a': [" + "'\\ud800', " * (min(n, 99_000) // 10) + "0x" + "f" * 500 + "]}"


SHAPES: Final[dict[str, Callable[[int], str]]] = {
    "deep brackets": _deep,
    "deep closed brackets": _deep_closed,
    "unterminated escaped quotes": _unterminated_escaped_quotes,
    "quotes": _quotes,
    "backslashes": _backslashes,
    "huge integer": _huge_integer,
    "huge float": _huge_float,
    "many keys": _many_keys,
    "brackets in strings": _brackets_in_strings,
    "lone surrogate escapes": _surrogate_escapes,
    "python literal": _python_literal,
}


def shape(name: str, n: int = MIB) -> str:
    """The attribute text of shape ``name``, about ``n`` characters."""
    return SHAPES[name](n)
