"""toolspan's one frozen configuration, resolved as: argument > environment variable > default.

(Minimal first version; see the config/serializer work for the full resolution and validation.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolspan import _env

# Keys whose values are secrets by default, matched case-insensitively as substrings of a key
# after removing '-' and '_' (so "X-Api-Key", "api_key" and "openaiApiKey" all match "apikey").
DEFAULT_REDACT_KEYS = frozenset(
    {"apikey", "token", "password", "passwd", "authorization", "secret", "cookie", "credential", "privatekey"}
)
REDACTED = "[REDACTED]"

Redactor = Callable[[str, Any], Any]


@dataclass(frozen=True)
class Config:
    capture_content: bool = True
    max_attribute_bytes: int = 16384
    redact_keys: frozenset[str] = field(default=DEFAULT_REDACT_KEYS)
    redact: Redactor | None = None


_current: Config | None = None


def resolve_config(
    *,
    capture_content: bool | None = None,
    max_attribute_bytes: int | None = None,
    redact_keys: tuple[str, ...] | frozenset[str] | None = None,
    redact: Redactor | None = None,
) -> Config:
    if capture_content is None:
        capture_content = _env.get_bool(_env.TOOLSPAN_CAPTURE_CONTENT)
        if capture_content is None:
            capture_content = _env.genai_capture_content()
        if capture_content is None:
            capture_content = True
    if max_attribute_bytes is None:
        max_attribute_bytes = _env.get_int(_env.TOOLSPAN_MAX_ATTRIBUTE_BYTES, minimum=64) or 16384
    extra = redact_keys if redact_keys is not None else _env.get_list(_env.TOOLSPAN_REDACT_KEYS)
    keys = DEFAULT_REDACT_KEYS | frozenset(k.lower().replace("-", "").replace("_", "") for k in extra)
    return Config(capture_content, max_attribute_bytes, keys, redact)


def get_config() -> Config:
    global _current
    if _current is None:
        _current = resolve_config()
    return _current


def set_config(config: Config | None) -> None:
    global _current
    _current = config
