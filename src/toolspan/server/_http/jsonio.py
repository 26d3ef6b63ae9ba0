"""JSON in and out of ``toolspan serve``'s HTTP routes, one way for every route.

- ``error``: the server's JSON error, ``{"error": message, "status": status}`` (and what a route adds to it),
  and ``Refused``, a request refused with one (``read_body``, ``parse_object`` and the routes raise it).
- ``read_body``: a request body read as a stream, refused past a size limit (413) before it is all in
  memory, and cut off when it stops coming for ``--read-timeout`` (408). OTLP ingest, the control channel and
  ``POST /api/ag-ui`` all read bodies through it.
- ``parse_object``: a body that must be one JSON object, parsed strictly: what JSON does not have (``NaN``,
  ``Infinity``, a number too large for a double such as ``1e999``), text no UTF-8 can carry (a lone
  surrogate, from a ``\\ud800`` escape) and nesting deeper than a route allows are ``Refused`` (400)
  naming the field that holds it (``arguments.rows[3]``), so nothing of it is stored or echoed.
- ``JSONResponse``: every JSON answer of the server. Its body is encoded as it is when it can be; a value
  that JSON cannot carry (a non-finite number, a lone surrogate in a span read back from the store) is
  written as JSON can carry it (``"NaN"``, an escaped surrogate) instead of failing the request.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import sys
from collections.abc import Mapping
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse as _StarletteJSON

from toolspan.errors import ToolspanError

__all__ = [
    "RETRY_AFTER_S",
    "JSONResponse",
    "Refused",
    "dumps_safe",
    "error",
    "parse_object",
    "read_body",
    "strict_value",
]

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
# What a 503 asks its client to wait before trying again (``Retry-After``).
RETRY_AFTER_S: Final = 5


def error(status: int, message: str, extra: Mapping[str, Any] | None = None) -> JSONResponse:
    """The server's JSON error: ``{"error": message, "status": status, **extra}``."""
    return JSONResponse({"error": message, "status": status, **(extra or {})}, status_code=status)


class Refused(ToolspanError):
    """A request refused: ``status``, a one-line reason naming the field, and what the answer adds (``extra``,
    such as the state of the call a decision named)."""

    def __init__(self, status: int, message: str, extra: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = dict(extra or {})

    def response(self) -> JSONResponse:
        return error(self.status, self.message, self.extra)


async def read_body(request: Request, limit: int, timeout_s: float) -> bytes:
    """The body of ``request``, at most ``limit`` bytes (413 beyond: a declared ``Content-Length`` is refused
    before anything is read, a body without one as soon as it passes the limit), each piece arriving within
    ``timeout_s`` seconds (408 otherwise).

    The deadline is one timer, moved at each piece, that cancels the reading task when it fires: it can fire
    only while the task waits for a piece, so its cancellation always lands here, and is told from any other
    by the timer's own mark. (A task and a wait per piece cost about 25 us each, the timer about 4: a body
    that trickles in small pieces costs the event loop a sixth of what it did.)"""
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise Refused(413, f"body of {declared} bytes is over the size limit of {limit} bytes")
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("read_body reads in a task")
    loop = asyncio.get_running_loop()
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    body = bytearray()
    deadline = loop.call_later(timeout_s, expire)
    try:
        async for chunk in request.stream():
            deadline.cancel()
            deadline = loop.call_later(timeout_s, expire)
            body += chunk
            if len(body) > limit:
                raise Refused(413, f"body is over the size limit of {limit} bytes")
    except asyncio.CancelledError:
        if not expired:
            raise  # the request itself was cancelled
        if sys.version_info >= (3, 11):
            task.uncancel()  # (the task goes on: it answers 408)
        raise Refused(408, f"no body bytes for {timeout_s:g} s: request timed out") from None
    finally:
        deadline.cancel()
    return bytes(body)


class _Constant:
    """``NaN``, ``Infinity`` or ``-Infinity`` in a body: kept as a marker until the walk names its field."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _number(text: str) -> float:
    value = float(text)
    return value if math.isfinite(value) else _Constant(text)  # type: ignore[return-value]


_DECODER: Final = json.JSONDecoder(parse_constant=_Constant, parse_float=_number)


def _where(path: list[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "the body"


def strict_value(value: Any, *, max_depth: int, at: str = "") -> str | None:
    """Why ``value`` (parsed JSON) is not plain JSON within ``max_depth`` levels, naming the field (``at``:
    the path before it), or ``None``. Iterative: any depth is walked without recursion."""
    stack: list[tuple[Any, list[str | int]]] = [(value, [at] if at else [])]
    while stack:
        item, path = stack.pop()
        if len(path) > max_depth + (1 if at else 0):
            return f"field {_where(path)!r} is nested deeper than {max_depth} levels"
        if isinstance(item, _Constant):
            return f"field {_where(path)!r} holds {item.text}, which JSON has no number for"
        if isinstance(item, float) and not math.isfinite(item):
            return f"field {_where(path)!r} holds a number JSON cannot carry ({item})"
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return f"field {_where(path)!r} holds a lone surrogate (text that is not UTF-8)"
        elif isinstance(item, dict):
            for key, child in item.items():
                if _SURROGATE.search(key):
                    return f"a key of field {_where(path)!r} holds a lone surrogate (text that is not UTF-8)"
                stack.append((child, [*path, key]))
        elif isinstance(item, list):
            stack.extend((child, [*path, n]) for n, child in enumerate(item))
    return None


def parse_object(raw: bytes, *, max_depth: int, what: str = "the body") -> dict[str, Any]:
    """``raw`` as one JSON object, parsed strictly (see the module doc); ``Refused`` (400) otherwise."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Refused(400, f"{what} is not UTF-8: {e}") from None
    try:
        doc = _DECODER.decode(text)
    except RecursionError:
        raise Refused(400, f"{what} is nested deeper than {max_depth} levels") from None
    except ValueError as e:
        raise Refused(400, f"{what} is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise Refused(400, f"{what} must be a JSON object")
    problem = strict_value(doc, max_depth=max_depth)
    if problem is not None:
        raise Refused(400, problem)
    return doc


def _carried(value: Any) -> Any:
    """``value`` with what JSON cannot carry written as it can: non-finite numbers as their names."""
    stack: list[Any] = []
    root: list[Any] = [value]
    stack.append((root, 0))
    while stack:
        holder, key = stack.pop()
        item = holder[key]
        if isinstance(item, float) and not math.isfinite(item):
            holder[key] = "NaN" if math.isnan(item) else ("Infinity" if item > 0 else "-Infinity")
        elif isinstance(item, dict):
            copy = dict(item)
            holder[key] = copy
            stack.extend((copy, k) for k in copy)
        elif isinstance(item, list | tuple):
            items = list(item)
            holder[key] = items
            stack.extend((items, n) for n in range(len(items)))
    return root[0]


def dumps_safe(content: Any) -> bytes:
    """Compact JSON bytes of ``content``; what JSON cannot carry is written as it can (see the module doc)."""
    try:
        return json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        pass
    return json.dumps(_carried(content), ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode()


class JSONResponse(_StarletteJSON):
    """Starlette's JSON response whose body never fails to encode (``dumps_safe``)."""

    def render(self, content: Any) -> bytes:
        return dumps_safe(content)
