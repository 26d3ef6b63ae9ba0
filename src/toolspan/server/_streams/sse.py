"""Server-sent events: the framing every stream of the server shares (``format_event``, the ``connected``
comment, heartbeats, ``reset``), and the response that sends a stream (``EventStreamResponse``).

Nothing is queued per client: a client that stops reading fills its socket buffer, and once one write has
waited ``send_timeout_s`` the client is dropped and counted. A stream ends when its chunks end, when its
client hangs up, or when the server shuts down; a store that cannot answer now ends it too (its client
resumes with its cursor).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from toolspan.bridge.internal import finite
from toolspan.server._rows.cursor import Cursor
from toolspan.server._rows.errors import StoreUnavailable

__all__ = [
    "CONNECTED",
    "HEARTBEAT",
    "EventStreamResponse",
    "format_event",
    "reset_event",
    "said_after_first",
    "within",
]

_logger = logging.getLogger(__name__)
HEARTBEAT: Final = b": heartbeat\n\n"
CONNECTED: Final = b"retry: 1000\n: connected\n\n"


async def within(awaitable: Awaitable[Any], timeout_s: float) -> bool:
    """Await ``awaitable`` for at most ``timeout_s`` seconds: ``True`` when it finished (its exception
    raised), ``False`` when the time ran out (it is cancelled then).

    Unlike ``asyncio.wait_for`` on Python 3.11 and older, a cancellation of the caller is never swallowed
    when the awaitable has just finished: a stream whose client hung up always ends.
    """
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
    except BaseException:
        task.cancel()
        raise
    if not done:
        task.cancel()
        return False
    task.result()
    return True


def format_event(cursor: Cursor, kind: str, data: Any) -> bytes:
    """One SSE event: its ``id:`` cursor, ``event:`` kind and ``data:`` JSON, strict UTF-8 whatever ``data``
    holds (a lone surrogate as its JSON escape, an integer too long for decimal text as its hex text), so no
    value of one span ends a stream."""
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    except ValueError:  # an integer over sys.get_int_max_str_digits()
        text = json.dumps(finite(data), ensure_ascii=False, separators=(",", ":"))
    return f"id: {cursor}\nevent: {kind}\ndata: {text}\n\n".encode("utf-8", "backslashreplace")


def reset_event(data: dict[str, Any]) -> bytes:
    """``event: reset``: the client's position cannot be resumed; what follows starts over."""
    return f"event: reset\ndata: {json.dumps(data)}\n\n".encode()


async def said_after_first(chunks: AsyncIterator[bytes], note: bytes) -> AsyncIterator[bytes]:
    """``chunks`` with ``note`` (an SSE comment) after the first chunk (the stream's ``connected``)."""
    first = True
    try:
        async for chunk in chunks:
            yield chunk
            if first:
                first = False
                yield note
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


class EventStreamResponse(Response):
    """``text/event-stream`` from an async iterator of chunks, with a per-write timeout and disconnect
    detection (the iterator is closed either way)."""

    media_type = "text/event-stream"

    def __init__(
        self,
        chunks: AsyncIterator[bytes],
        *,
        send_timeout_s: float,
        on_drop: Callable[[], None],
        ending: asyncio.Event | None = None,
    ) -> None:
        super().__init__(headers={"cache-control": "no-cache", "x-accel-buffering": "no"})
        self._chunks = chunks
        self._send_timeout_s = send_timeout_s
        self._on_drop = on_drop
        self._ending = ending

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        pump = asyncio.ensure_future(self._pump(send))
        watch = asyncio.ensure_future(_disconnected(receive))
        # The server shutting down ends the stream as its client hanging up does.
        end = asyncio.ensure_future(
            self._ending.wait() if self._ending is not None else asyncio.Event().wait()
        )
        stuck = False
        try:
            await asyncio.wait({pump, watch, end}, return_when=asyncio.FIRST_COMPLETED)
            if pump.done() and not pump.cancelled():
                failure = pump.exception()
                if isinstance(failure, StoreUnavailable):  # its client resumes with its cursor
                    _logger.warning(
                        "toolspan serve: a stream ended (the store cannot answer now): %s", failure
                    )
                elif failure is not None:
                    _logger.error("toolspan serve: stream failed", exc_info=failure)
                else:
                    stuck = pump.result()
        finally:
            for task in (pump, watch, end):
                task.cancel()
            await asyncio.gather(pump, watch, end, return_exceptions=True)
            aclose = getattr(self._chunks, "aclose", None)
            if aclose is not None:
                await aclose()
        # End the response (a no-op once the client is gone); a client that stopped reading would never
        # take it, so its connection is closed by ending the response with an error instead.
        last: Message = {"type": "http.response.body", "body": b"", "more_body": False}
        if not stuck:
            # (At shutdown a client not reading gets a moment only: the server is waiting.)
            wait_s = (
                min(self._send_timeout_s, 0.25)
                if end.done() and not end.cancelled()
                else self._send_timeout_s
            )
            with contextlib.suppress(Exception):
                await within(send(last), wait_s)

    async def _pump(self, send: Send) -> bool:
        """Send every chunk; ``True`` when the client stopped reading (and was dropped)."""
        async for chunk in self._chunks:
            message: Message = {"type": "http.response.body", "body": chunk, "more_body": True}
            if not await within(send(message), self._send_timeout_s):
                _logger.warning("toolspan serve: dropped a stream client that stopped reading")
                self._on_drop()
                return True
        return False


async def _disconnected(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
