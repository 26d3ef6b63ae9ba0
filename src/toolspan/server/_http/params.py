"""What the routes read from a request's path and query, one way for every route."""

from __future__ import annotations

import base64
from typing import Final

from toolspan.bridge.model import pad_trace_id

__all__ = ["trace_id_param"]

_HEX: Final = frozenset("0123456789abcdef")


def trace_id_param(raw: str) -> str | None:
    """A path's trace id as the bridge spells it (32 lowercase hex), from hex or base64; else ``None``."""
    text = raw.strip().lower()
    if text and len(text) <= 32 and set(text) <= _HEX:
        return pad_trace_id(text)
    try:
        decoded = base64.b64decode(raw, validate=True)
    except ValueError:
        return None
    return decoded.hex() if len(decoded) == 16 else None
