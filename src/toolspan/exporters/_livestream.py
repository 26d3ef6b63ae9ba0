"""``LiveStream``: one subscriber's bounded async iterator of live events."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import Any, Protocol

__all__ = ["LiveStream", "StreamOwner"]

Event = dict[str, Any]


class StreamOwner(Protocol):
    """What feeds a stream: ``LiveEventProcessor``."""

    def _remove_stream(self, stream: LiveStream) -> None: ...

    def _count_drop(self) -> None: ...


class LiveStream:
    """One subscriber's async iterator of live events (one consumer per stream).

    Producers (any thread) append to a buffer of at most ``maxsize`` events and wake the consumer's
    loop with ``loop.call_soon_threadsafe`` (at most one wake-up pending at a time), so memory stays
    bounded even while the loop is busy. When the consumer is slower than the tools, the oldest
    events are dropped and counted in ``dropped``. Iteration ends after the processor shuts down or
    after ``aclose()``, once the buffered events are read. Also an async context manager that closes
    the stream on exit.
    """

    def __init__(self, processor: StreamOwner, loop: asyncio.AbstractEventLoop, maxsize: int) -> None:
        self._processor = processor
        self._loop = loop
        self._lock = threading.Lock()
        self._buffer: deque[Event] = deque()
        self._maxsize = max(1, maxsize)
        self._ready = asyncio.Event()
        self._wake_pending = False
        self._closed = False
        self.dropped = 0

    def _offer(self, event: Event) -> bool:
        """Buffer ``event`` (from any thread); ``False`` when the consumer's loop is closed."""
        with self._lock:
            if self._closed:
                return True
            dropped = len(self._buffer) >= self._maxsize
            if dropped:
                self._buffer.popleft()
                self.dropped += 1
            self._buffer.append(event)
        if dropped:
            self._processor._count_drop()
        return self._wake()

    def _close(self) -> bool:
        with self._lock:
            self._closed = True
        return self._wake()

    def _wake(self) -> bool:
        with self._lock:
            if self._wake_pending:
                return True
            self._wake_pending = True
        try:
            self._loop.call_soon_threadsafe(self._woken)
        except RuntimeError:  # the loop is closed: nobody will ever read this stream
            return False
        return True

    def _woken(self) -> None:  # on the consumer's loop
        with self._lock:
            self._wake_pending = False
        self._ready.set()

    def __aiter__(self) -> LiveStream:
        return self

    async def __anext__(self) -> Event:
        while True:
            with self._lock:
                if self._buffer:
                    return self._buffer.popleft()
                if self._closed:
                    raise StopAsyncIteration
            await self._ready.wait()
            self._ready.clear()

    async def aclose(self) -> None:
        """Stop receiving events; iteration ends once the buffered events are read."""
        self._processor._remove_stream(self)
        self._close()

    async def __aenter__(self) -> LiveStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
