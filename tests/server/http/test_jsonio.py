"""``jsonio.read_body``: a body read whole, refused past its limit (413) and when a piece is late (408), its
deadline one timer whose cancellation never outlives the read, and a cancelled request still cancelled."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest
from starlette.requests import Request

from toolspan.server._http.jsonio import Refused, read_body

Message = dict[str, Any]


def _request(
    receive: Callable[[], Awaitable[Message]], headers: Sequence[tuple[bytes, bytes]] = ()
) -> Request:
    return Request({"type": "http", "method": "POST", "path": "/", "headers": list(headers)}, receive)


class _Client:
    """Sends ``pieces`` at once, the last one closing the body when ``finished``; else it then sends nothing
    more, ever (``stalled`` is set once the server waits on it)."""

    def __init__(self, *pieces: bytes, finished: bool = True) -> None:
        self.queue = list(pieces)
        self.finished = finished
        self.stalled = asyncio.Event()

    async def receive(self) -> Message:
        if not self.queue:
            self.stalled.set()
            await asyncio.Event().wait()
        body = self.queue.pop(0)
        return {"type": "http.request", "body": body, "more_body": bool(self.queue) or not self.finished}


def _pieces(*pieces: bytes, finished: bool = True) -> Callable[[], Awaitable[Message]]:
    return _Client(*pieces, finished=finished).receive


def test_a_body_in_pieces_is_read_whole() -> None:
    assert asyncio.run(read_body(_request(_pieces(b"ab", b"", b"cd", b"e")), 10, 5.0)) == b"abcde"


def test_a_body_past_its_limit_is_413_before_it_is_all_in() -> None:
    async def read() -> bytes:
        return await read_body(_request(_pieces(b"x" * 6, b"x" * 6, b"never read")), 10, 5.0)

    with pytest.raises(Refused) as refused:
        asyncio.run(read())
    assert refused.value.status == 413
    declared = _request(_pieces(b""), [(b"content-length", b"11")])
    with pytest.raises(Refused) as refused:
        asyncio.run(read_body(declared, 10, 5.0))
    assert refused.value.status == 413


def test_a_piece_that_never_comes_is_408_and_the_task_goes_on_uncancelled() -> None:
    async def read() -> tuple[int, int]:
        task = asyncio.current_task()
        assert task is not None
        with pytest.raises(Refused) as refused:
            await read_body(_request(_pieces(b"started", finished=False)), 100, 0.05)
        await asyncio.sleep(0)  # no cancellation left behind to land here
        cancelling = task.cancelling() if sys.version_info >= (3, 11) else 0  # type: ignore[attr-defined,unused-ignore]
        return refused.value.status, cancelling

    assert asyncio.run(read()) == (408, 0)


def test_a_cancelled_request_is_cancelled_not_timed_out() -> None:
    async def read() -> None:
        client = _Client(b"started", finished=False)
        reading = asyncio.create_task(read_body(_request(client.receive), 100, 60.0))
        await client.stalled.wait()
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading

    asyncio.run(read())
