"""Redaction: which keys are secret, and the secrets written inside text.

One ``Redaction`` per ``redact_keys`` set answers both questions the serializer asks:

- ``is_secret(key)``: a key whose normalised form ends with a secret name (``"X-Api-Key"``,
  ``b"api_key"``, ``"OPENAI_API_KEY"``; not ``"max_tokens"``). The serializer replaces the value under
  such a key, and the second item of a ``(key, value)`` pair (header tuples), by ``"[REDACTED]"``;
- ``text(value)``: ``value`` with the secrets it spells out replaced by ``"[REDACTED]"``, keeping
  the rest: ``key=value`` parameters (URL query strings, form bodies, DSNs, cookies:
  ``?api_key=[REDACTED]&page=2``), ``key: value`` header lines (``Authorization: [REDACTED]``,
  ``Set-Cookie: [REDACTED]``), quoted ``"key": value`` entries of JSON or Python text, passwords in
  URLs (``postgres://user:[REDACTED]@host/db``) and bearer tokens (``Bearer [REDACTED]``).

Redaction errs on the side of hiding: a secret key's value runs to the end of its line or parameter.
"""

from __future__ import annotations

import re
from typing import Any, Final

from toolspan.config import REDACTED, normalize_key

__all__ = ["Redaction", "redaction"]

_CACHE_MAX: Final = 4096

# Every keyed form below has a key right before ``=`` or ``:`` (optionally closing a quote, possibly
# escaped as in JSON text). ``_keys`` finds the separators, then reads each key backwards: a
# forward regex would try every position of the text.
_SEPARATOR: Final = re.compile(r"[:=]")
_KEY_REVERSED: Final = re.compile(r"""[ \t]*["']?\\?([\w.-]+)""")
_KEY_MAX: Final = 160

# ``scheme://user:password@``: the password.
_USERINFO: Final = re.compile(
    r"(?P<head>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)(?P<value>[^/\s]+)(?=@)"
)
# ``Bearer <token>`` anywhere; ``Basic <token>`` when it is the whole text (headers are caught below).
_BEARER: Final = re.compile(r"(?P<head>\bBearer\s+)(?P<value>[^\s,;\"']+)", re.IGNORECASE)
_SCHEME_ALONE: Final = re.compile(r"(?P<head>(?:Basic|Digest|Token)\s+)(?P<value>\S+)\s*$", re.IGNORECASE)
_SCHEME_INITIALS: Final = frozenset("BbDdTt")
# ``"key": value`` / ``'key': value`` (JSON or Python text): quoted, or bare up to a delimiter.
_QUOTED: Final = re.compile(
    r"""(?P<q>["'])(?P<key>[^"'\\\s]{1,128})(?P=q)[ \t]*[:=][ \t]*"""
    r"""(?P<value>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|[^,}\]\s]+)"""
)
# ``key: value`` to the end of the line (header lines, YAML, prose like ``password: x``).
_HEADER: Final = re.compile(
    r"""(?<![\w-])(?P<key>[A-Za-z_][\w-]*)[ \t]*:[ \t]*"""
    r"""(?P<value>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|[^\r\n"']*[^\r\n"'\s])"""
)
# ``key=value`` up to the next parameter delimiter (query strings, form bodies, DSNs, cookies).
_PARAM: Final = re.compile(r"""(?<![\w.-])(?P<key>[\w.-]+)=(?P<value>[^&;#\s"'<>]+)""")


class Redaction:
    """The secret tests of one ``redact_keys`` set, with a cache of keys already judged."""

    __slots__ = ("names", "safe", "secret", "suffixes")

    def __init__(self, keys: frozenset[str]) -> None:
        self.suffixes = tuple(sorted(keys))
        self.names = re.compile("|".join(re.escape(key) for key in sorted(keys, key=len, reverse=True)))
        self.safe: set[str] = set()
        self.secret: set[str] = set()

    def is_secret(self, key: str) -> bool:
        """Whether the value under ``key`` is a secret."""
        if key in self.safe:
            return False
        if key in self.secret:
            return True
        found = normalize_key(key).endswith(self.suffixes)
        if len(key) <= 128 and len(self.safe) + len(self.secret) < _CACHE_MAX:
            if found:
                self.secret.add(key)
            elif not self.may_hold(key):  # "safe" means: nothing to redact, neither under it nor in it
                self.safe.add(key)
        return found

    def is_secret_name(self, key: Any) -> bool:
        """``is_secret`` for a str or bytes key (a bytes key by its UTF-8 text); False for others."""
        if isinstance(key, (bytes, bytearray)):
            key = bytes(key).decode("utf-8", "replace")
        return isinstance(key, str) and self.is_secret(key)

    def is_secret_pair(self, value: Any) -> bool:
        """Whether ``value`` is a 2-item ``(secret key, value)`` pair, like a header tuple."""
        return type(value) in {tuple, list} and len(value) == 2 and self.is_secret_name(value[0])

    # -- text ---------------------------------------------------------------------------------------

    def may_hold(self, text: str) -> bool:
        """Whether ``text`` can hold a secret: False only when it surely does not. Cheap on plain text."""
        if "=" in text or ":" in text:
            if "@" in text and "://" in text:
                return True
            folded = normalize_key(text)
            if self.names.search(folded) is not None and any(self.is_secret(key) for key in _keys(text)):
                return True
        if "earer" in text or "EARER" in text:
            return _BEARER.search(text) is not None
        return text[:1] in _SCHEME_INITIALS and _SCHEME_ALONE.match(text) is not None

    def text(self, text: str) -> str:
        """``text`` with the secrets it spells out replaced by ``[REDACTED]``."""
        if not self.may_hold(text):
            return text
        text = _USERINFO.sub(_hide, text)
        text = _BEARER.sub(_hide, text)
        alone = _SCHEME_ALONE.match(text) if text[:1] in _SCHEME_INITIALS else None
        if alone is not None:
            return alone["head"] + REDACTED
        text = _QUOTED.sub(self._hide_keyed, text)
        text = _HEADER.sub(self._hide_keyed, text)
        return _PARAM.sub(self._hide_keyed, text)

    def _hide_keyed(self, match: re.Match[str]) -> str:
        if not self.is_secret(match["key"]):
            return match[0]
        value = match["value"]
        if value == REDACTED or value[1:-1] == REDACTED:
            return match[0]
        start, end = match.span("value")
        quote = value[0] if value[:1] in {'"', "'"} and value[-1:] == value[0] and len(value) > 1 else ""
        whole = match.string[match.start() : start] + quote + REDACTED + quote
        return whole + match.string[end : match.end()]


def _keys(text: str) -> list[str]:
    """The candidate keys of ``text``: the word before each ``:`` or ``=``."""
    out = []
    for separator in _SEPARATOR.finditer(text):
        end = separator.start()
        found = _KEY_REVERSED.match(text[max(0, end - _KEY_MAX) : end][::-1])
        if found is not None:
            out.append(found[1][::-1])
    return out


def _hide(match: re.Match[str]) -> str:
    return match["head"] + REDACTED


_REDACTIONS: dict[frozenset[str], Redaction] = {}


def redaction(keys: frozenset[str]) -> Redaction:
    """The (shared) ``Redaction`` of a ``redact_keys`` set."""
    found = _REDACTIONS.get(keys)
    if found is None:
        if len(_REDACTIONS) > 64:
            _REDACTIONS.clear()
        found = _REDACTIONS[keys] = Redaction(keys)
    return found
