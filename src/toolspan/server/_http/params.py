"""What the routes read from a request's path and query, one way for every route."""

from __future__ import annotations

import base64

from toolspan._util.ids import parse_trace_id

__all__ = ["trace_id_param"]


def trace_id_param(raw: str) -> str | None:
    """A path's trace id as the bridge spells it (32 lowercase hex), from hex or base64; else ``None``."""
    hex_id = parse_trace_id(raw.strip(), short=True, any_case=True)
    if hex_id is not None:
        return hex_id
    try:
        decoded = base64.b64decode(raw, validate=True)
    except ValueError:
        return None
    return decoded.hex() if len(decoded) == 16 else None
