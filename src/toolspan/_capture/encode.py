"""The JSON encoder every captured value goes through, and its UTF-8 size."""

from __future__ import annotations

from typing import Final

from toolspan._util.otel_internals import json_encoder

__all__ = ["ENCODE", "nbytes"]


# ``JSONEncoder(ensure_ascii=False, allow_nan=False).encode`` through the C encoder, built once
# (``toolspan._util.otel_internals.json_encoder``: checked, with the stdlib encoder as its fallback).
ENCODE: Final = json_encoder()


def nbytes(text: str) -> int:
    """The UTF-8 size of ``text`` (lone surrogates count as their 3 bytes)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
