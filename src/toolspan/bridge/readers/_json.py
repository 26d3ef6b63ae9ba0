"""The JSON library of the readers and the CLI: orjson when installed (an optional extra), else the stdlib.

orjson parses and writes several times faster. Every document the standard library accepts is still
accepted: input orjson rejects (``NaN``, ``Infinity``, lone surrogates, ...) is parsed again with
``json.loads``, so error messages are the standard library's. Known differences with orjson: integers
beyond 64 bits parse as floats (OTLP and Jaeger carry at most int64), and ``toolspan convert`` writes
non-finite floats as ``null`` (the standard library writes ``NaN``). ``TOOLSPAN_JSON=stdlib`` turns
orjson off.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import IO, Any

from toolspan import _env

Loads = Callable[[Any], Any]
Dumps = Callable[[Any], bytes]


def _orjson() -> Any:
    if (_env.get(_env.TOOLSPAN_JSON) or "auto").lower() == "stdlib":
        return None
    try:
        import orjson
    except ImportError:
        return None
    return orjson


def backend() -> str:
    """``"orjson"`` or ``"stdlib"``: what ``loads_function`` and ``dumps_function`` use now."""
    return "stdlib" if _orjson() is None else "orjson"


def loads_function() -> Loads:
    """A ``loads(bytes | str)`` with the standard library's acceptance and errors."""
    fast = _orjson()
    if fast is None:
        return json.loads
    fast_loads, slow_loads, fast_error = fast.loads, json.loads, fast.JSONDecodeError

    def loads(data: Any) -> Any:
        try:
            return fast_loads(data)
        except fast_error:
            return slow_loads(data)

    return loads


def _stdlib_text_dumps() -> Callable[[Any], str]:
    from json import encoder

    make = getattr(encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - pure-Python json
        return json.JSONEncoder(ensure_ascii=False, check_circular=False, separators=(",", ":")).encode

    def not_json(value: Any) -> Any:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    # (markers, default, encoder, indent, key_separator, item_separator, sort_keys, skipkeys, allow_nan);
    # built once and reused, unlike JSONEncoder.encode which builds one per call.
    chunks = make(None, not_json, encoder.encode_basestring, None, ":", ",", False, False, True)
    join = "".join
    return lambda value: join(chunks(value, 0))


def dumps_function() -> Dumps:
    """Compact UTF-8 JSON of one value; falls back to the standard library for what orjson refuses."""
    text = _stdlib_text_dumps()
    fast = _orjson()
    if fast is None:
        return lambda value: text(value).encode("utf-8")
    fast_dumps = fast.dumps

    def dumps(value: Any) -> bytes:
        try:
            return bytes(fast_dumps(value))
        except TypeError:  # an integer beyond 64 bits, a non-string key, ...
            return text(value).encode("utf-8")

    return dumps


def write_json_lines(items: Iterable[Any], out: IO[bytes], batch: int = 4096) -> int:
    """Write each item as one line of compact JSON; returns how many were written."""
    n = 0
    buf: list[Any] = []
    fast = _orjson()
    if fast is None:  # join text, encode once per batch
        text = _stdlib_text_dumps()
        for item in items:
            buf.append(text(item))
            n += 1
            if len(buf) >= batch:
                buf.append("")
                out.write("\n".join(buf).encode("utf-8"))
                buf.clear()
        if buf:
            buf.append("")
            out.write("\n".join(buf).encode("utf-8"))
        return n
    dumps = dumps_function()
    for item in items:
        buf.append(dumps(item))
        n += 1
        if len(buf) >= batch:
            buf.append(b"")
            out.write(b"\n".join(buf))
            buf.clear()
    if buf:
        buf.append(b"")
        out.write(b"\n".join(buf))
    return n
