"""One serializer for every captured value: JSON text that is always valid and never raises.

``dumps(value, config)`` is for telemetry: redacted, within ``config.max_attribute_bytes`` UTF-8 bytes.
``to_json_text(value)`` is for tool results returned to a model: same conversion, no redaction, no budget.
Output uses ``json.dumps``' separators (``", "``, ``": "``) and keeps non-ASCII text as is.

Conversion (anything plain JSON cannot hold): dataclass instances and pydantic (v2 and v1) models become
objects; tuples, namedtuples and deques become arrays; sets/frozensets become arrays sorted by their JSON
text; ``bytes``/``bytearray``/``memoryview`` become their UTF-8 text, or ``"base64:<data>"`` when not
UTF-8; datetimes, dates and times become ISO 8601 strings, ``timedelta`` an ISO 8601 duration
(``"P1DT2.5S"``); ``Decimal``, ``UUID`` and paths their string; an ``Enum`` its value; NaN and
infinities the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``; ints too long for ``str()`` their
``hex()``; non-string keys as ``json.dumps`` writes them (other key types: their ``repr``). Anything else
(generators are not consumed) becomes its ``repr()`` string, or ``"[unrepresentable <type>: <error>]"``
when that raises. A structure met again inside itself becomes ``"[cycle: <type>]"``; nesting deeper
than ``MAX_DEPTH`` becomes ``"[max depth: <type>]"``. Values under secret keys become ``"[REDACTED]"``.

Truncation markers (``N`` is how much was cut; every marker contains ``...[truncated``):

- a string keeps a prefix and ends with ``"...[truncated N chars]"``;
- an array keeps its first items and ends with the element ``"...[truncated N items]"``;
- an object keeps its first entries and ends with the entry ``"...[truncated]": N`` (N keys cut);
- when structure alone cannot fit, the whole value becomes
  ``{"toolspan.truncated": true, "preview": "<start of the JSON text>...[truncated N chars]"}``.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import decimal
import enum
import json
import logging
import math
import re
import uuid
from collections import deque
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any, Final

from toolspan._otel_internals import json_encoder
from toolspan.config import REDACTED, Config, Redactor, normalize_key

__all__ = ["MAX_DEPTH", "dumps", "to_json_text"]

_logger = logging.getLogger(__name__)

MAX_DEPTH: Final = 32
DICT_MARKER_KEY: Final = "...[truncated]"
FALLBACK_KEY: Final = "toolspan.truncated"


# ``JSONEncoder(ensure_ascii=False, allow_nan=False).encode`` through the C encoder, built once. Without
# cycle checks: a cycle ends in ``RecursionError``, which sends the value to the slow path like any
# other encoding error.
_ENCODE: Final = json_encoder()
_SURROGATES: Final = re.compile("[\ud800-\udfff]")
_SAFE_KEYS_MAX: Final = 4096


def _nbytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


# --- redaction key matching -------------------------------------------------------------------------


class _Matcher:
    """Secret-key test for one ``redact_keys`` set, with a cache of keys known to be safe."""

    __slots__ = ("safe", "secret", "suffixes")

    def __init__(self, keys: frozenset[str]) -> None:
        self.suffixes = tuple(sorted(keys))
        self.safe: set[str] = set()
        self.secret: set[str] = set()

    def is_secret(self, key: str) -> bool:
        if key in self.safe:
            return False
        if key in self.secret:
            return True
        found = normalize_key(key).endswith(self.suffixes)
        if len(key) <= 128 and len(self.safe) + len(self.secret) < _SAFE_KEYS_MAX:
            (self.secret if found else self.safe).add(key)
        return found

    def has_secret(self, value: Any, depth: int = 0) -> bool:
        """Whether any dict key inside a JSON-native ``value`` is a secret (conservative: True if unsure)."""
        if depth > MAX_DEPTH:
            return True
        if isinstance(value, dict):
            if not self.safe.issuperset(value) and any(
                isinstance(key, str) and self.is_secret(key) for key in value
            ):
                return True
            items: Any = value.values()
        elif isinstance(value, (list, tuple)):
            items = value
        else:
            return False
        for item in items:
            if isinstance(item, (dict, list, tuple)) and self.has_secret(item, depth + 1):
                return True
        return False


_MATCHERS: dict[frozenset[str], _Matcher] = {}


def _matcher(keys: frozenset[str]) -> _Matcher:
    matcher = _MATCHERS.get(keys)
    if matcher is None:
        if len(_MATCHERS) > 64:
            _MATCHERS.clear()
        matcher = _MATCHERS[keys] = _Matcher(keys)
    return matcher


def _may_hold_secret(value: Any, text: str, matcher: _Matcher) -> bool:
    """Fast check on a value that encoded cleanly: False only when no dict key in it is a secret."""
    count = text.count('": ')
    if not count:  # no object key anywhere (string values escape their quotes)
        return False
    if type(value) is dict and count == len(value):  # only top-level keys (nested ones add more)
        if matcher.safe.issuperset(value):
            return False
        return any(isinstance(k, str) and matcher.is_secret(k) for k in value)
    try:
        return matcher.has_secret(value)
    except Exception:
        return True


# --- conversion to JSON-native values ----------------------------------------------------------------


class _CutStr(str):
    omitted: int


class _CutList(list[Any]):
    omitted: int


class _CutDict(dict[str, Any]):
    omitted: int


def _cut_str(text: str, omitted: int) -> _CutStr:
    out = _CutStr(text)
    out.omitted = omitted
    return out


def _clean(text: str) -> str:
    """``text`` as a plain ``str`` that encodes to UTF-8 (lone surrogates replaced)."""
    if type(text) is not str:
        text = str.__str__(text)
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATES.sub("\ufffd", text)
    return text


def _type_name(value: Any) -> str:
    try:
        return str(type(value).__name__)
    except Exception:
        return "object"


def _safe_repr(value: Any) -> str:
    try:
        text = repr(value)
        if not isinstance(text, str):
            raise TypeError("__repr__ returned a non-string")
        return _clean(text)
    except Exception as exc:
        return f"[unrepresentable {_type_name(value)}: {_type_name(exc)}]"


def _int(value: int) -> int | str:
    value = int.__index__(value)
    if value.bit_length() > 1000:
        try:
            int.__repr__(value)
        except ValueError:  # exceeds sys.get_int_max_str_digits()
            return hex(value)
    return value


def _float(value: float) -> float | str:
    value = float.__float__(value)
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def _duration(value: _dt.timedelta) -> str:
    micros = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
    sign = "-" if micros < 0 else ""
    days, rest = divmod(abs(micros), 86_400_000_000)
    seconds, micro = divmod(rest, 1_000_000)
    secs = f"{seconds}.{micro:06d}".rstrip("0").rstrip(".") if micro else str(seconds)
    return f"{sign}P{days}DT{secs}S" if days else f"{sign}PT{secs}S"


def _key(key: Any) -> str:
    """A mapping key as ``json.dumps`` writes it (``repr`` for other types)."""
    if isinstance(key, str):
        return _clean(key)
    if key is None or isinstance(key, bool):
        return json.dumps(key)
    if isinstance(key, int):
        return str(_int(key))
    if isinstance(key, float):
        return str(_float(key)) if not math.isfinite(key) else float.__repr__(float.__float__(key))
    if isinstance(key, enum.Enum):
        return _key(key.value)
    return _safe_repr(key)


def _bytes_text(data: bytes, omitted: int) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if omitted and exc.start >= len(data) - 3 and exc.reason == "unexpected end of data":
            omitted += len(data) - exc.start
            text = data[: exc.start].decode("utf-8", "replace")
        else:
            text = "base64:" + base64.b64encode(data).decode("ascii")
    return _cut_str(text, omitted) if omitted else text


class _Walker:
    """Turns any value into JSON-native data; with a budget, stops early (cuts are marked by _Cut*)."""

    __slots__ = ("budget", "cut", "left", "matcher", "redact", "stack")

    def __init__(self, matcher: _Matcher | None, redact: Redactor | None, budget: int | None) -> None:
        self.matcher = matcher
        self.redact = redact
        self.budget = budget
        # A lower bound of the bytes written so far is subtracted; past zero nothing more can fit.
        self.left = budget if budget is not None else -1
        self.stack: set[int] = set()
        self.cut = False  # whether anything was left out (then the result needs _fit to render markers)

    def spend(self, amount: int) -> None:
        if self.budget is not None:
            self.left -= amount

    def full(self) -> bool:
        return self.budget is not None and self.left <= 0

    def call_redact(self, path: str, value: Any) -> Any:
        assert self.redact is not None
        try:
            return self.redact(path, value)
        except Exception:
            _logger.warning("toolspan: redact callback raised for %r; value redacted", path, exc_info=True)
            return REDACTED

    def root(self, value: Any) -> Any:
        if self.redact is not None:
            value = self.call_redact("", value)
        return self.conv(value, 0, "")

    def conv(self, value: Any, depth: int, path: str) -> Any:
        try:
            return self._conv(value, depth, path)
        except Exception as exc:
            self.spend(16)
            return f"[unrepresentable {_type_name(value)}: {_type_name(exc)}]"

    def text(self, text: str) -> str:
        if self.budget is not None and len(text) > max(self.left, 0):
            keep = max(self.left, 0)
            self.spend(keep + 2)
            self.cut = True
            return _cut_str(_clean(text[:keep]), len(text) - keep)
        text = _clean(text)
        self.spend(len(text) + 2)
        return text

    def _conv(self, value: Any, depth: int, path: str) -> Any:
        if value is None or value is True or value is False:
            self.spend(4)
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, int):
            out_int = _int(value)
            self.spend(1)
            return out_int
        if isinstance(value, float):
            out_float = _float(value)
            self.spend(1)
            return out_float
        if isinstance(value, enum.Enum):
            return self.conv(value.value, depth, path)
        if isinstance(value, (bytes, bytearray, memoryview)):
            return self.conv_bytes(value)
        if isinstance(value, (_dt.date, _dt.time)):
            return self.text(value.isoformat())
        if isinstance(value, _dt.timedelta):
            return self.text(_duration(value))
        if isinstance(value, (decimal.Decimal, uuid.UUID, PurePath)):
            return self.text(str(value))
        container = isinstance(value, (dict, list, tuple, set, frozenset, deque, Mapping))
        model = None if container else _model_items(value)
        if not container and model is None:
            return self.text(_safe_repr(value))
        if id(value) in self.stack:
            return self.text(f"[cycle: {_type_name(value)}]")
        if depth >= MAX_DEPTH:
            return self.text(f"[max depth: {_type_name(value)}]")
        self.stack.add(id(value))
        try:
            if model is not None:
                return self.mapping(model, len(model), depth, path)
            if isinstance(value, (dict, Mapping)):
                return self.mapping(value.items(), len(value), depth, path)
            if isinstance(value, (set, frozenset)):
                return self.conv_set(value, depth, path)
            return self.sequence(value, len(value), depth, path)
        finally:
            self.stack.discard(id(value))

    def conv_bytes(self, value: bytes | bytearray | memoryview) -> str:
        size = value.nbytes if isinstance(value, memoryview) else len(value)
        keep = size if self.budget is None else min(size, max(self.left, 0))
        if isinstance(value, memoryview):
            data = value.tobytes()[:keep]
        else:
            data = bytes(value[:keep] if keep < size else value)
        text = _bytes_text(data, size - keep)
        self.cut = self.cut or keep < size
        self.spend(len(text) + 2)
        return text

    def mapping(self, items: Any, size: int, depth: int, path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        self.spend(2)
        taken = 0
        for raw_key, item in items:
            if self.full():
                break
            taken += 1
            key = _key(raw_key)
            self.spend(len(key) + 4)
            if self.matcher is not None and self.matcher.is_secret(key):
                out[key] = REDACTED
                self.spend(len(REDACTED) + 2)
                continue
            if self.redact is not None:
                child_path = f"{path}.{key}" if path else key
                out[key] = self.conv(self.call_redact(child_path, item), depth + 1, child_path)
            else:
                out[key] = self.conv(item, depth + 1, "")
        if taken < size:
            self.cut = True
            cut = _CutDict(out)
            cut.omitted = size - taken
            return cut
        return out

    def sequence(self, items: Any, size: int, depth: int, path: str) -> list[Any]:
        out: list[Any] = []
        self.spend(2)
        for index, item in enumerate(items):
            if self.full():
                break
            self.spend(2)
            child_path = "" if self.redact is None else f"{path}.{index}" if path else str(index)
            out.append(self.conv(item, depth + 1, child_path))
        if len(out) < size:
            self.cut = True
            cut = _CutList(out)
            cut.omitted = size - len(out)
            return cut
        return out

    def conv_set(self, value: set[Any] | frozenset[Any], depth: int, path: str) -> list[Any]:
        # Sorted by JSON text for a deterministic order; every element is converted to sort it.
        saved = self.budget
        self.budget = None
        try:
            items = [self.conv(item, depth + 1, path) for item in value]
        finally:
            self.budget = saved
        items.sort(key=_ENCODE)
        return self.sequence(items, len(items), depth, path)


def _model_items(value: Any) -> list[tuple[Any, Any]] | None:
    """(key, value) pairs of a dataclass instance (not deep-copied) or a pydantic v2/v1 model's dump."""
    cls = type(value)
    if isinstance(value, type):
        return None
    if dataclasses.is_dataclass(cls):
        out: list[tuple[Any, Any]] = []
        for f in dataclasses.fields(value):
            try:
                out.append((f.name, getattr(value, f.name)))
            except Exception as exc:
                out.append((f.name, f"[unavailable: {_type_name(exc)}]"))
        return out
    if callable(getattr(cls, "model_dump", None)) and hasattr(cls, "model_fields"):  # pydantic v2
        dump = value.model_dump
    elif hasattr(cls, "__fields__") and callable(getattr(cls, "dict", None)):  # pydantic v1
        dump = value.dict
    else:
        return None
    try:
        return list(dump().items())
    except Exception:
        return None


# --- fitting JSON-native data into a byte budget ------------------------------------------------------


def _render(node: Any) -> Any:
    """Plain JSON data with the cut markers written in."""
    if isinstance(node, str):
        omitted = getattr(node, "omitted", 0)
        return f"{node}...[truncated {omitted} chars]" if omitted else str.__str__(node)
    if isinstance(node, list):
        out = [_render(item) for item in node]
        omitted = getattr(node, "omitted", 0)
        if omitted:
            out.append(_list_marker(omitted))
        return out
    if isinstance(node, dict):
        out_dict = {key: _render(item) for key, item in node.items()}
        omitted = getattr(node, "omitted", 0)
        if omitted:
            out_dict[DICT_MARKER_KEY] = omitted
        return out_dict
    return node


def _list_marker(omitted: int) -> str:
    return f"...[truncated {omitted} items]"


def _size(node: Any) -> int:
    return _nbytes(_ENCODE(node))


def _fit(node: Any, limit: int) -> tuple[Any, int] | None:
    """``node`` rendered to at most ``limit`` bytes of JSON (cut and marked), or None if impossible."""
    if limit <= 0:
        return None
    full = _render(node)
    size = _size(full)
    if size <= limit:
        return full, size
    if isinstance(node, str):
        return _fit_str(node, limit)
    if isinstance(node, list):
        return _fit_list(node, limit)
    if isinstance(node, dict):
        return _fit_dict(node, limit)
    return None


def _fit_str(node: str, limit: int) -> tuple[str, int] | None:
    prior = getattr(node, "omitted", 0)
    length = len(node)
    keep = min(length, limit)
    while True:
        omitted = prior + length - keep
        marker = f"...[truncated {omitted} chars]" if omitted else ""
        text = node[:keep] + marker
        size = _size(text)
        if size <= limit:
            return text, size
        if keep == 0:
            return None
        per_char = max(1.0, (size - len(marker) - 2) / keep)  # bytes per kept char, roughly
        keep = max(0, keep - max(1, math.ceil((size - limit) / per_char)))


def _fit_list(node: list[Any], limit: int) -> tuple[list[Any], int] | None:
    prior = getattr(node, "omitted", 0)
    count = len(node)
    out: list[Any] = []
    used = 2
    for index, item in enumerate(node):
        sep = 2 if out else 0
        after = prior + count - index - 1  # items cut if we stop right after this one
        reserve = 2 + _size(_list_marker(after)) if after else 0
        fitted = _fit(item, limit - used - sep - reserve)
        if fitted is None:
            break
        out.append(fitted[0])
        used += sep + fitted[1]
    omitted = prior + count - len(out)
    if omitted:
        out.append(_list_marker(omitted))
        used += (2 if len(out) > 1 else 0) + _size(out[-1])
    return (out, used) if used <= limit else None


def _fit_dict(node: dict[str, Any], limit: int) -> tuple[dict[str, Any], int] | None:
    prior = getattr(node, "omitted", 0)
    count = len(node)
    out: dict[str, Any] = {}
    used = 2
    marker_key = _size(DICT_MARKER_KEY) + 2
    for index, (key, item) in enumerate(node.items()):
        sep = 2 if out else 0
        after = prior + count - index - 1
        reserve = 2 + marker_key + len(str(after)) if after else 0
        key_size = _size(key) + 2
        fitted = _fit(item, limit - used - sep - key_size - reserve)
        if fitted is None:
            break
        out[key] = fitted[0]
        used += sep + key_size + fitted[1]
    omitted = prior + count - len(out)
    if omitted:
        used += (2 if out else 0) + marker_key + len(str(omitted))
        out[DICT_MARKER_KEY] = omitted
    return (out, used) if used <= limit else None


def _only_marker(tree: Any, out: Any) -> bool:
    """Whether a non-empty container was cut down to its marker alone (a preview says more)."""
    omitted: int = getattr(tree, "omitted", 0)
    if isinstance(tree, dict) and (tree or omitted):
        return isinstance(out, dict) and list(out) == [DICT_MARKER_KEY]
    if isinstance(tree, list) and (tree or omitted):
        return bool(out == [_list_marker(len(tree) + omitted)])
    return False


def _fallback(full_text: str, limit: int, cut_text: str | None) -> str:
    """The wrapper with a preview of ``full_text``; else ``cut_text`` (a marker-only cut) if any."""
    head = _ENCODE({FALLBACK_KEY: True, "preview": ""})
    preview = _fit_str(full_text, limit - _nbytes(head) + 2)  # +2: the preview's quotes are in both
    if preview is not None:
        return _ENCODE({FALLBACK_KEY: True, "preview": preview[0]})
    if cut_text is not None:
        return cut_text
    head = _ENCODE({FALLBACK_KEY: True})
    return head if _nbytes(head) <= limit else "null"


# --- public functions ---------------------------------------------------------------------------------


def dumps(value: Any, config: Config) -> str:
    """JSON text of ``value`` for a span attribute: redacted, at most ``config.max_attribute_bytes``
    UTF-8 bytes, always valid JSON, never raising."""
    budget = config.max_attribute_bytes
    if config.redact is None and not (type(value) is str and len(value) > budget):
        # Fast path: plain JSON that fits and has no secret key is returned as the C encoder wrote it.
        try:
            text = _ENCODE(value)
            if (len(text) if text.isascii() else len(text.encode("utf-8"))) <= budget:
                if '": ' not in text:  # no object key anywhere (string values escape their quotes)
                    return text
                matcher = _MATCHERS.get(config.redact_keys) or _matcher(config.redact_keys)
                if type(value) is dict and matcher.safe.issuperset(value) and text.count('": ') == len(value):
                    return text  # a flat dict whose keys are all known to be safe
                if not _may_hold_secret(value, text, matcher):
                    return text
        except Exception:
            pass
    try:
        return _dumps_slow(value, _matcher(config.redact_keys), config.redact, budget)
    except Exception:
        _logger.warning("toolspan: could not serialise a %s value", _type_name(value), exc_info=True)
        text = _ENCODE(f"[unrepresentable {_type_name(value)}]")
        return text if _nbytes(text) <= budget else "null"


def _dumps_slow(value: Any, matcher: _Matcher, redact: Redactor | None, budget: int) -> str:
    walker = _Walker(matcher, redact, budget)
    tree = walker.root(value)
    if not walker.cut:
        text = _ENCODE(tree)
        if _nbytes(text) <= budget:
            return text
    fitted = _fit(tree, budget)
    cut_text = None
    if fitted is not None:
        text = _ENCODE(fitted[0])
        if _nbytes(text) <= budget:
            if not _only_marker(tree, fitted[0]):
                return text
            cut_text = text
    return _fallback(_ENCODE(_render(tree)), budget, cut_text)


def to_json_text(value: Any) -> str:
    """Full JSON text of ``value`` for returning to a model: not redacted, not truncated, never raising."""
    try:
        text = _ENCODE(value)
        if not text.isascii():
            text.encode("utf-8")
        return text
    except Exception:
        pass
    try:
        return _ENCODE(_Walker(None, None, None).root(value))
    except Exception:
        _logger.warning("toolspan: could not serialise a %s value", _type_name(value), exc_info=True)
        return _ENCODE(f"[unrepresentable {_type_name(value)}]")
