"""Conversions of single values the JSON encoder cannot take as they are (see ``serialize``)."""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import enum
import json
import math
import re
from typing import Any, Final

from toolspan._capture.truncate import cut_str

__all__ = [
    "bytes_text",
    "clean",
    "duration",
    "float_value",
    "int_value",
    "key_text",
    "model_items",
    "safe_repr",
    "type_name",
]

_SURROGATES: Final = re.compile("[\ud800-\udfff]")


def clean(text: str) -> str:
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


def type_name(value: Any) -> str:
    try:
        return str(type(value).__name__)
    except Exception:
        return "object"


def safe_repr(value: Any) -> str:
    try:
        text = repr(value)
        if not isinstance(text, str):
            raise TypeError("__repr__ returned a non-string")
        return clean(text)
    except Exception as exc:
        return f"[unrepresentable {type_name(value)}: {type_name(exc)}]"


def int_value(value: int) -> int | str:
    value = int.__index__(value)
    if value.bit_length() > 1000:
        try:
            int.__repr__(value)
        except ValueError:  # exceeds sys.get_int_max_str_digits()
            return hex(value)
    return value


def float_value(value: float) -> float | str:
    value = float.__float__(value)
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def duration(value: _dt.timedelta) -> str:
    micros = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
    sign = "-" if micros < 0 else ""
    days, rest = divmod(abs(micros), 86_400_000_000)
    seconds, micro = divmod(rest, 1_000_000)
    secs = f"{seconds}.{micro:06d}".rstrip("0").rstrip(".") if micro else str(seconds)
    return f"{sign}P{days}DT{secs}S" if days else f"{sign}PT{secs}S"


def key_text(key: Any) -> str:
    """A mapping key as ``json.dumps`` writes it; bytes as their UTF-8 text; ``repr`` for other types."""
    if isinstance(key, str):
        return clean(key)
    if key is None or isinstance(key, bool):
        return json.dumps(key)
    if isinstance(key, int):
        return str(int_value(key))
    if isinstance(key, float):
        return str(float_value(key)) if not math.isfinite(key) else float.__repr__(float.__float__(key))
    if isinstance(key, enum.Enum):
        return key_text(key.value)
    if isinstance(key, (bytes, bytearray)):
        return clean(bytes(key).decode("utf-8", "replace"))
    return safe_repr(key)


def bytes_text(data: bytes, omitted: int) -> str:
    """``data`` as UTF-8 text, else ``"base64:<data>"``; ``omitted`` bytes were cut off its end."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if omitted and exc.start >= len(data) - 3 and exc.reason == "unexpected end of data":
            omitted += len(data) - exc.start
            text = data[: exc.start].decode("utf-8", "replace")
        else:
            text = "base64:" + base64.b64encode(data).decode("ascii")
    return cut_str(text, omitted) if omitted else text


def model_items(value: Any) -> list[tuple[Any, Any]] | None:
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
                out.append((f.name, f"[unavailable: {type_name(exc)}]"))
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
