"""toolspan's one frozen configuration, resolved as: argument > environment variable > default.

``resolve_config(...)`` builds a validated :class:`Config`; ``configure()`` installs it with
``set_config``; instrumentation reads it with ``get_config()`` on every call (a module global read,
no environment parsing after the first call).

Settings:

- ``capture_content``: record tool arguments/results and agent messages. Argument >
  ``TOOLSPAN_CAPTURE_CONTENT`` > ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (a no-content
  value such as ``false``/``NO_CONTENT`` turns capture off) > on.
- ``max_attribute_bytes``: UTF-8 byte budget of one captured value (default 16384, minimum 64).
  Argument > ``TOOLSPAN_MAX_ATTRIBUTE_BYTES`` > default, and never above the SDK's attribute length limit
  (``OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT`` / ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``), which would cut
  a value unmarked.
- ``redact_keys``: values under these keys are replaced by ``"[REDACTED]"`` at any depth. A key
  matches when its normalised form (case-folded, ``-`` and ``_`` removed) *ends with* one of these
  normalised names, so ``"X-Api-Key"``, ``"apiKey"`` and ``"OPENAI_API_KEY"`` all match ``api_key``
  while ``"max_tokens"`` does not match ``token``. The built-in secret names are always included;
  names given as argument and in ``TOOLSPAN_REDACT_KEYS`` add up (a setting never un-redacts a key).
- ``redact``: optional callback ``redact(path, value) -> value``. ``path`` is the dotted path of the
  value inside the captured object (``""`` for the whole value, ``"user.password"``,
  ``"items.0.token"``; list positions are numbers). It is called for the whole value and for every
  mapping entry (dict keys, dataclass/pydantic fields) not already redacted by key, with the original
  Python value, and returns what to record instead (return ``value`` unchanged to keep it,
  ``REDACTED`` to hide it). What it returns is serialised normally (its own entries are checked
  again). If it raises, the value is recorded as ``REDACTED``.
- ``conventions``: which attribute conventions tool spans are written in: ``"genai"`` (OpenTelemetry
  GenAI), ``"openinference"`` (OpenInference, what Phoenix-style UIs read) or both
  (``"genai,openinference"``, the default). A comma-separated string or a collection of names; stored
  as the canonical string (``genai`` first). With ``genai`` alone, toolspan's ids and ``COMPLETED``
  state (derivable from the span) are left out too. Argument > ``TOOLSPAN_CONVENTIONS`` > both.

Bad environment values are logged and ignored; bad arguments raise ``TypeError``/``ValueError``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from toolspan import semconv
from toolspan._util import env as _env

__all__ = [
    "CONVENTIONS",
    "CONVENTIONS_BOTH",
    "CONVENTIONS_GENAI",
    "CONVENTIONS_OPENINFERENCE",
    "DEFAULT_MAX_ATTRIBUTE_BYTES",
    "DEFAULT_REDACT_KEYS",
    "MIN_ATTRIBUTE_BYTES",
    "REDACTED",
    "Config",
    "Redactor",
    "get_config",
    "normalize_key",
    "parse_conventions",
    "resolve_config",
    "set_config",
]

_logger = logging.getLogger(__name__)

REDACTED: Final = semconv.REDACTED_VALUE
DEFAULT_MAX_ATTRIBUTE_BYTES: Final = 16384
MIN_ATTRIBUTE_BYTES: Final = 64

CONVENTIONS_GENAI: Final = "genai"
CONVENTIONS_OPENINFERENCE: Final = "openinference"
CONVENTIONS_BOTH: Final = "genai,openinference"
# Every accepted setting, canonical form: the names in this order, comma-separated.
CONVENTIONS: Final = (CONVENTIONS_GENAI, CONVENTIONS_OPENINFERENCE, CONVENTIONS_BOTH)
_CONVENTION_NAMES: Final = (CONVENTIONS_GENAI, CONVENTIONS_OPENINFERENCE)

Redactor = Callable[[str, Any], Any]
"""``redact(path, value) -> value``: see the module docstring."""


def normalize_key(key: str) -> str:
    """A key as redaction compares it: case-folded, without ``-`` and ``_``."""
    return key.casefold().replace("-", "").replace("_", "")


# Built-in secret names (already normalised); a key matches when its normalised form ends with one.
DEFAULT_REDACT_KEYS: Final = frozenset(
    {
        "apikey",
        "token",
        "accesstoken",
        "refreshtoken",
        "password",
        "passwd",
        "passphrase",
        "authorization",
        "secret",
        "clientsecret",
        "secretkey",
        "accesskey",
        "cookie",
        "cookies",
        "setcookie",
        "credential",
        "credentials",
        "privatekey",
        "sessionkey",
    }
)


def _normalize_keys(keys: Iterable[object], what: str) -> frozenset[str]:
    if isinstance(keys, (str, bytes)):
        raise TypeError(f"{what} must be a collection of key names, not a single {type(keys).__name__}")
    out: set[str] = set()
    for key in keys:
        if not isinstance(key, str):
            raise TypeError(f"{what} must contain str key names, got {type(key).__name__}: {key!r}")
        norm = normalize_key(key.strip())
        if not norm:
            raise ValueError(f"{what} contains an empty key name: {key!r}")
        out.add(norm)
    return frozenset(out)


def parse_conventions(value: object) -> str:
    """The canonical conventions string of ``value`` (``"genai"``, ``"openinference"`` or
    ``"genai,openinference"``): a comma-separated string or a collection of names, any case."""
    if isinstance(value, str):
        parts: list[object] = list(value.split(","))
    elif isinstance(value, bytes) or not isinstance(value, Iterable):
        raise TypeError(f"conventions must be a str or a collection of str, got {type(value).__name__}")
    else:
        parts = list(value)
    names: set[str] = set()
    for part in parts:
        if not isinstance(part, str):
            raise TypeError(f"conventions must contain str names, got {type(part).__name__}: {part!r}")
        name = part.strip().lower()
        if name not in _CONVENTION_NAMES:
            raise ValueError(
                f"conventions: unknown name {part!r} (expected {CONVENTIONS_GENAI!r}, "
                f"{CONVENTIONS_OPENINFERENCE!r} or both, comma-separated)"
            )
        names.add(name)
    if not names:
        raise ValueError("conventions must name at least one of 'genai' and 'openinference'")
    return ",".join(name for name in _CONVENTION_NAMES if name in names)


@dataclass(frozen=True)
class Config:
    """Validated capture settings. ``redact_keys`` is the complete set (normalised on creation)."""

    capture_content: bool = True
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES
    redact_keys: frozenset[str] = field(default=DEFAULT_REDACT_KEYS)
    redact: Redactor | None = None
    conventions: str = CONVENTIONS_BOTH

    def __post_init__(self) -> None:
        if not isinstance(self.capture_content, bool):
            raise TypeError(f"capture_content must be a bool, got {type(self.capture_content).__name__}")
        size = self.max_attribute_bytes
        if isinstance(size, bool) or not isinstance(size, int):
            raise TypeError(f"max_attribute_bytes must be an int, got {type(size).__name__}")
        if size < MIN_ATTRIBUTE_BYTES:
            raise ValueError(f"max_attribute_bytes must be >= {MIN_ATTRIBUTE_BYTES}, got {size}")
        if self.redact is not None and not callable(self.redact):
            raise TypeError(f"redact must be a callable (path, value) -> value, got {self.redact!r}")
        object.__setattr__(self, "redact_keys", _normalize_keys(self.redact_keys, "redact_keys"))
        object.__setattr__(self, "conventions", parse_conventions(self.conventions))


def resolve_config(
    *,
    capture_content: bool | None = None,
    max_attribute_bytes: int | None = None,
    redact_keys: Iterable[str] | None = None,
    redact: Redactor | None = None,
    conventions: str | Iterable[str] | None = None,
) -> Config:
    """Resolve each setting as argument > environment > default; raise on bad arguments."""
    if capture_content is None:
        capture_content = _env.get_bool(_env.TOOLSPAN_CAPTURE_CONTENT)
        if capture_content is None:
            capture_content = _env.genai_capture_content()
        if capture_content is None:
            capture_content = True
    if max_attribute_bytes is None:
        max_attribute_bytes = _env.get_int(_env.TOOLSPAN_MAX_ATTRIBUTE_BYTES, minimum=MIN_ATTRIBUTE_BYTES)
        if max_attribute_bytes is None:
            max_attribute_bytes = DEFAULT_MAX_ATTRIBUTE_BYTES
    sdk_limit = _env.sdk_attribute_limit()
    if sdk_limit is not None and isinstance(max_attribute_bytes, int) and sdk_limit < max_attribute_bytes:
        # The SDK would cut a longer value where toolspan did not mark it (an audit, a replay could not tell):
        # toolspan cuts first, within the SDK's limit (characters: a value within N bytes has at most N).
        if sdk_limit < MIN_ATTRIBUTE_BYTES:
            _logger.warning(
                "toolspan: the SDK's attribute length limit (%d) is under toolspan's least budget (%d):"
                " captured values longer than it are cut by the SDK, unmarked",
                sdk_limit,
                MIN_ATTRIBUTE_BYTES,
            )
        max_attribute_bytes = max(MIN_ATTRIBUTE_BYTES, sdk_limit)
    keys = set(DEFAULT_REDACT_KEYS)
    for name in _env.get_list(_env.TOOLSPAN_REDACT_KEYS):
        norm = normalize_key(name)
        if norm:
            keys.add(norm)
        else:
            _logger.warning("toolspan: ignoring empty key %r in %s", name, _env.TOOLSPAN_REDACT_KEYS.name)
    if redact_keys is not None:
        keys |= _normalize_keys(redact_keys, "redact_keys")
    conventions = _env_conventions() if conventions is None else parse_conventions(conventions)
    return Config(capture_content, max_attribute_bytes, frozenset(keys), redact, conventions)


def _env_conventions() -> str:
    value = _env.get(_env.TOOLSPAN_CONVENTIONS)
    if value is None:
        return CONVENTIONS_BOTH
    try:
        return parse_conventions(value)
    except ValueError:
        _logger.warning(
            "toolspan: ignoring %s=%r (expected genai, openinference or genai,openinference)",
            _env.TOOLSPAN_CONVENTIONS.name,
            value,
        )
        return CONVENTIONS_BOTH


_current: Config | None = None


def get_config() -> Config:
    """The active configuration (resolved from the environment on first use)."""
    config = _current
    if config is None:
        config = _first_config()
    return config


def _first_config() -> Config:
    global _current
    try:
        config = resolve_config()
    except Exception:  # cannot happen with env-only input; never break a tool call over it
        _logger.exception("toolspan: could not resolve the configuration; using defaults")
        config = Config()
    _current = config
    return config


def set_config(config: Config | None) -> None:
    """Install ``config``; ``None`` re-resolves from the environment on the next ``get_config()``."""
    global _current
    if config is not None and not isinstance(config, Config):
        raise TypeError(f"set_config expects a Config or None, got {type(config).__name__}")
    _current = config
