"""The JSON encoder every captured value goes through, and its UTF-8 size."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

__all__ = ["ENCODE", "nbytes"]


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _make_encode() -> Callable[[Any], str]:
    """``JSONEncoder(ensure_ascii=False, allow_nan=False).encode``, calling the C encoder directly.

    Built once (``JSONEncoder.encode`` builds it on every call). Without cycle checks: a cycle ends in
    ``RecursionError``, which sends the value to the slow path like any other encoding error.
    """
    fallback = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode
    make = getattr(json.encoder, "c_make_encoder", None)
    quote = getattr(json.encoder, "c_encode_basestring", None)
    if make is None or quote is None:
        return fallback
    try:
        chunks = make(None, _not_json, quote, None, ": ", ", ", False, False, False)
        join = "".join

        def encode(value: Any) -> str:
            if type(value) is str:
                return quote(value)  # type: ignore[no-any-return]
            return join(chunks(value, 0))

        sample = {"a": [1, 2.5, None, True, 'é\n"', {"b": -3}], "1": "x"}
        if encode(sample) != fallback(sample):
            return fallback
    except Exception:
        return fallback
    return encode


ENCODE: Final = _make_encode()


def nbytes(text: str) -> int:
    """The UTF-8 size of ``text`` (lone surrogates count as their 3 bytes)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
