"""The bearer tokens of ``toolspan serve`` and what each may do, read one way for OTLP/HTTP, the read API,
the control channel and OTLP/gRPC alike.

Two kinds of token:

- the application's (``--token`` / ``TOOLSPAN_SERVER_TOKEN``): it may send spans (``ingest``) and read
  (``read``: the API, pages, streams, and the control channel's GET routes an application long-polls); it
  never decides or cancels;
- deciders' (``--decider NAME=TOKEN``, repeatable, or ``TOOLSPAN_DECIDERS=name=token,...``): each may read
  and ``decide`` (decide and cancel tool calls through the control channel), never send spans. A decision
  or cancel request is recorded as made by the name of the decider token that made it.

Without any token sent, a client may do what the server leaves open: ingest and read when it has no
application token, nothing otherwise. A token is ``Authorization: Bearer <token>`` with the scheme in any
case, the token exactly as sent, surrounding whitespace dropped (RFC 6750); every token of the server is
compared with it in constant time (all of them, whichever matches).
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Sequence
from typing import Final, NamedTuple

__all__ = [
    "DECIDE",
    "INGEST",
    "READ",
    "Access",
    "Tokens",
    "bearer_token",
    "decider_problem",
    "token_matches",
]

INGEST: Final = "ingest"
READ: Final = "read"
DECIDE: Final = "decide"
_ORDER: Final = (INGEST, READ, DECIDE)
# A decider's name is what decisions record as ``by``: short, printable, no separators of the flag's format.
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")


def bearer_token(value: bytes | str) -> bytes:
    """The token of one ``Authorization`` value, ``b""`` when it is no bearer credential."""
    raw = value.encode("latin-1", "replace") if isinstance(value, str) else bytes(value)
    raw = raw.strip()
    if raw[:7].lower() != b"bearer ":
        return b""
    return raw[7:].strip()


def token_matches(given: bytes, expected: bytes) -> bool:
    """Whether ``given`` is the token ``expected`` (constant time; an empty token never matches)."""
    return bool(given) and hmac.compare_digest(given, expected)


class Access(NamedTuple):
    """What one request's token may do: ``name`` (the decider's, else ``None``) and ``can`` (a subset of
    ``ingest``, ``read``, ``decide``); ``known`` is false for a token the server does not hold."""

    name: str | None
    can: frozenset[str]
    known: bool = True

    def listed(self) -> list[str]:
        """``can`` in its fixed order (``/api/whoami``)."""
        return [c for c in _ORDER if c in self.can]


class Tokens:
    """The tokens of one server: the application's (``token``) and the deciders' (``name -> token``)."""

    def __init__(self, token: str | None, deciders: Sequence[tuple[str, str]] = ()) -> None:
        self.app = token.encode() if token else None
        self.deciders = tuple((name, secret.encode()) for name, secret in deciders)

    @property
    def any(self) -> bool:
        """Whether the server has any token (else every request is anonymous and may ingest and read)."""
        return self.app is not None or bool(self.deciders)

    @property
    def anonymous(self) -> Access:
        """What a request without a token may do."""
        return Access(None, frozenset() if self.app is not None else frozenset({INGEST, READ}))

    def access(self, given: bytes) -> Access:
        """What the token ``given`` may do (``b""``: none sent). Every token is compared, in constant time,
        whichever matches; a token the server does not hold is ``known=False`` with what anonymous may do."""
        if not given:
            return self.anonymous
        found: Access | None = None
        if self.app is not None and hmac.compare_digest(given, self.app):
            found = Access(None, frozenset({INGEST, READ}))
        for name, secret in self.deciders:
            if hmac.compare_digest(given, secret) and found is None:
                found = Access(name, frozenset({READ, DECIDE}))
        if found is not None:
            return found
        return self.anonymous._replace(known=False)


def decider_problem(token: str | None, deciders: Sequence[tuple[str, str]]) -> str | None:
    """Why the server cannot start with these tokens (``None`` when it can): a decider token equal to the
    application's (whoever sends spans could decide), two deciders sharing a token or a name, or a name that
    cannot be recorded as ``by``."""
    names: set[str] = set()
    secrets: set[str] = set()
    for name, secret in deciders:
        if not _NAME.fullmatch(name):
            return (
                f"decider name {name[:80]!r} is not 1-64 letters, digits or . _ @ + - (starting with a letter"
                " or a digit)"
            )
        if name in names:
            return f"two deciders are named {name!r}: each decider token has a name of its own"
        if token is not None and hmac.compare_digest(secret.encode(), token.encode()):
            return (
                f"decider {name!r} has the application's token (--token): what may send spans may not decide;"
                " give each decider a token of its own"
            )
        if secret in secrets:
            return f"decider {name!r} shares its token with another decider: each decider needs its own token"
        names.add(name)
        secrets.add(secret)
    return None
