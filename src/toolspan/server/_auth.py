"""The bearer token of ``toolspan serve``, read one way for OTLP/HTTP, the read API and OTLP/gRPC alike:
``Authorization: Bearer <token>`` with the scheme in any case, the token exactly as sent, surrounding
whitespace dropped (RFC 6750), compared in constant time."""

from __future__ import annotations

import hmac

__all__ = ["bearer_token", "token_matches"]


def bearer_token(value: bytes | str) -> bytes:
    """The token of one ``Authorization`` value, ``b""`` when it is no bearer credential."""
    raw = value.encode("latin-1", "replace") if isinstance(value, str) else bytes(value)
    raw = raw.strip()
    if raw[:7].lower() != b"bearer ":
        return b""
    return raw[7:].strip()


def token_matches(given: bytes, expected: bytes) -> bool:
    """Whether ``given`` is the server's token (constant time; an empty token never matches)."""
    return bool(given) and hmac.compare_digest(given, expected)
