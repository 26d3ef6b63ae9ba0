"""Normalisation of ids, times, kinds, statuses and OTLP AnyValues into the neutral model.

Every helper raises ``FieldError`` (a ``ValueError``) with the offending sub-path on bad input.
Bytes values (OTLP ``bytesValue``, Jaeger ``binary`` tags, protobuf ``bytes_value``) become their
standard padded base64 string: the neutral model holds JSON-able values only, and base64 is what
OTLP JSON and Jaeger already carry, so every format reads to the same string.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import math
from typing import Any, Final

from toolspan._util import ids
from toolspan.bridge._json_write import nonfinite_text
from toolspan.bridge.model import SPAN_KINDS
from toolspan.errors import ToolspanError

HEX: Final = ids.HEX_DIGITS  # the alphabet of ids, for the readers' inlined fast paths
ZERO_TRACE: Final = "0" * 32
ZERO_SPAN: Final = "0" * 16
# Span times are nanoseconds since the Unix epoch in an unsigned 64-bit integer (OTLP ``fixed64``).
MAX_NS: Final = 2**64 - 1


class FieldError(ToolspanError, ValueError):
    """A bad value at ``path`` (relative to the record being read)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _b64decode(text: str) -> bytes:
    """Standard or URL-safe base64, padded or not (as proto3 JSON parsers accept)."""
    text = text.replace("-", "+").replace("_", "/")
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


def _id_slow(value: Any, nbytes: int, what: str) -> str:
    if not isinstance(value, str):
        raise FieldError("", f"not a hex or base64 {what} id: {_short(value)}")
    if not value:
        return "0" * (2 * nbytes)
    hex_id = ids.hex_id(value, 2 * nbytes, short=True, any_case=True)
    if hex_id is not None:
        return hex_id
    try:
        raw = _b64decode(value)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != nbytes:  # base64 ids always carry the full id (hex ids may be short)
        raise FieldError("", f"not a hex or base64 {what} id: {_short(value)}")
    return raw.hex()


def trace_id(value: Any) -> str:
    """A 32-hex trace id from hex (any case, any length up to 32) or base64; ``""`` means missing."""
    if type(value) is str and len(value) == 32:
        hex_id = ids.hex_id(value, ids.TRACE_ID_DIGITS, any_case=True)
        if hex_id is not None:
            return hex_id
    return _id_slow(value, 16, "trace")


def span_id(value: Any) -> str:
    """A 16-hex span id from hex (any case, any length up to 16) or base64; ``""`` means missing."""
    if type(value) is str and len(value) == 16:
        hex_id = ids.hex_id(value, ids.SPAN_ID_DIGITS, any_case=True)
        if hex_id is not None:
            return hex_id
    return _id_slow(value, 8, "span")


def parent_id(value: Any) -> str | None:
    """A parent span id, or ``None`` for a missing, empty or all-zero one."""
    if value is None or value == "":
        return None
    sid = span_id(value)
    return None if sid == ZERO_SPAN else sid


def in_range(ns: int) -> int:
    """``ns`` when it fits OTLP's unsigned 64-bit nanoseconds, else ``FieldError``."""
    if 0 <= ns <= MAX_NS:
        return ns
    raise FieldError("", f"out of range: {_short(ns)} (nanoseconds since the Unix epoch: 0 to 2**64-1)")


def nanos(value: Any) -> int:
    """Integer nanoseconds (``0 <= ns < 2**64``) from an int or a decimal string."""
    t = type(value)
    if t is int:
        return in_range(int(value))
    if t is str:
        try:
            number = int(value)
        except ValueError:
            pass
        else:
            return in_range(number)
    raise FieldError("", f"not an integer of nanoseconds: {_short(value)}")


def not_before(end: int | None, start: int) -> int | None:
    """``end`` unless it is before ``start`` (``FieldError``)."""
    if end is not None and end < start:
        raise FieldError("", f"before the start time ({end} < {start})")
    return end


def end_nanos(value: Any) -> int | None:
    """Like ``nanos``; a missing or zero end time is ``None`` (the span never ended)."""
    if value is None or value in ("0", 0):
        return None
    return nanos(value)


def _names(prefix: str, names: tuple[str, ...]) -> dict[Any, str]:
    table: dict[Any, str] = {}
    for number, name in enumerate(names):
        table[number] = name
        table[name] = name
        table[name.lower()] = name
        table[prefix + name] = name
    return table


KINDS: Final = _names("SPAN_KIND_", SPAN_KINDS)
STATUSES: Final = _names("STATUS_CODE_", ("UNSET", "OK", "ERROR"))


def kind(value: Any) -> str:
    """A ``SPAN_KINDS`` name from a number, an enum name or a Jaeger ``span.kind`` value."""
    if value is None:
        return "UNSPECIFIED"
    if type(value) in (int, str):
        name = KINDS.get(value)
        if name is not None:
            return name
    raise FieldError("", f"unknown span kind: {_short(value)}")


def status(value: Any) -> tuple[str, str]:
    """``(code, message)`` from an OTLP status object (numbers, names, legacy ``deprecatedCode``)."""
    if not value:
        if value is None or type(value) is dict:
            return "UNSET", ""
        raise FieldError("", f"not a status object: {_short(value)}")
    if type(value) is not dict:
        raise FieldError("", f"not a status object: {_short(value)}")
    message = value.get("message", "")
    if message is None:
        message = ""
    elif type(message) is not str:
        raise FieldError("message", f"not a string: {_short(message)}")
    raw = value.get("code")
    if raw is None:
        code = "UNSET"
    else:
        found = STATUSES.get(raw) if type(raw) in (int, str) else None
        if found is None:
            raise FieldError("code", f"unknown status code: {_short(raw)}")
        code = found
    if code == "UNSET":
        # OTLP rule for old senders: code unset and deprecated_code not OK means ERROR.
        old = value.get("deprecatedCode")
        if old not in (None, 0, "DEPRECATED_STATUS_CODE_OK"):
            code = "ERROR"
    return code, message


# --- OTLP JSON AnyValue -------------------------------------------------------------------------


def _str(x: Any) -> str:
    if type(x) is str:
        return x
    raise FieldError("stringValue", f"not a string: {_short(x)}")


def _bool(x: Any) -> bool:
    if type(x) is bool:
        return x
    raise FieldError("boolValue", f"not a boolean: {_short(x)}")


def _int(x: Any) -> int:
    t = type(x)
    if t is int:
        return int(x)
    if t is str:
        try:
            return int(x)
        except ValueError:
            pass
    raise FieldError("intValue", f"not an integer: {_short(x)}")


def double(x: Any, path: str = "doubleValue", what: str = "a number") -> float | str:
    """A float from a number or a numeric string; a non-finite one as ``"NaN"``, ``"Infinity"`` or
    ``"-Infinity"`` (how OTLP/JSON writes them), so the model holds only strict-JSON values."""
    t = type(x)
    number: float | None = None
    if t is float or t is int:
        number = float(x)
    elif t is str:
        with contextlib.suppress(ValueError):
            number = float(x)
    if number is None:
        raise FieldError(path, f"not {what}: {_short(x)}")
    return number if math.isfinite(number) else nonfinite_text(number)


def b64_text(x: Any, path: str = "bytesValue") -> str:
    """Validate base64 (standard or URL-safe) and return it in standard padded form."""
    if type(x) is str:
        try:
            raw = _b64decode(x)
        except (binascii.Error, ValueError):
            pass
        else:
            return base64.b64encode(raw).decode("ascii")
    raise FieldError(path, f"not base64: {_short(x)}")


def _values_list(x: Any, path: str) -> list[Any]:
    if type(x) is not dict:
        raise FieldError(path, f"not an object: {_short(x)}")
    values = x.get("values")
    if values is None:
        return []
    if type(values) is not list:
        raise FieldError(path + ".values", f"not a list: {_short(values)}")
    return values


def _array(x: Any) -> list[Any]:
    out = []
    for i, item in enumerate(_values_list(x, "arrayValue")):
        try:
            out.append(any_value(item))
        except FieldError as e:
            raise FieldError(_sub(f"arrayValue.values[{i}]", e.path), e.message) from None
    return out


def _kvlist(x: Any) -> dict[str, Any]:
    try:
        return attributes(_values_list(x, "kvlistValue"))
    except FieldError as e:
        if e.path.startswith("kvlistValue"):
            raise
        raise FieldError(_sub("kvlistValue.values", e.path), e.message) from None


_ANY: Final = {
    "stringValue": _str,
    "boolValue": _bool,
    "intValue": _int,
    "doubleValue": double,
    "bytesValue": b64_text,
    "arrayValue": _array,
    "kvlistValue": _kvlist,
}


def _sub(prefix: str, path: str) -> str:
    if not path:
        return prefix
    return prefix + path if path.startswith("[") else f"{prefix}.{path}"


def any_value(value: Any) -> Any:
    """Plain Python from an OTLP JSON AnyValue (``{}`` or no known key means ``None``)."""
    if value is None:
        return None
    if type(value) is not dict:
        raise FieldError("", f"not an AnyValue object: {_short(value)}")
    for key, x in value.items():
        conv = _ANY.get(key)
        if conv is not None:
            return conv(x)
    return None


def attributes(items: Any) -> dict[str, Any]:
    """A dict from an OTLP JSON KeyValue list (``None`` means empty); later duplicates win."""
    out: dict[str, Any] = {}
    if items is None:
        return out
    try:
        for kv in items:
            key = kv["key"]
            value = kv["value"]
            s = value.get("stringValue")
            if s.__class__ is not str or len(value) != 1:
                s = any_value(value)
            if key.__class__ is not str:
                raise TypeError
            out[key] = s
    except Exception:  # anything unusual: the careful path, which also names a bad item precisely
        return _attributes_slow(items)
    return out


def _attributes_slow(items: Any) -> dict[str, Any]:
    if type(items) is not list:
        raise FieldError("", f"not a list: {_short(items)}")
    out: dict[str, Any] = {}
    for i, kv in enumerate(items):
        if type(kv) is not dict:
            raise FieldError(f"[{i}]", f"not a key/value object: {_short(kv)}")
        key = kv.get("key")
        if type(key) is not str:
            raise FieldError(f"[{i}].key", f"not a string: {_short(key)}")
        try:
            out[key] = any_value(kv.get("value"))
        except FieldError as e:
            raise FieldError(_sub(f"[{i}].value", e.path), e.message) from None
    return out
