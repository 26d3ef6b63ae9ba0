"""Requests through a ``toolspan serve`` ASGI application in this process (``build_app``), no server or
socket. ``AsgiClient`` runs the application on an event loop of its own, in a thread, started and ended by
its lifespan as uvicorn does (streams and long polls need both); ``request`` sends one request and returns
the answer once the response is complete. A stream still open after ``within`` seconds is answered as far as
it got (its client then hangs up), so a test never hangs on it; a request with no answer at all by then fails
the test. ``head_only`` hangs up once the request is sent, and takes only the status; ``until`` hangs up as
soon as the body so far says it has what the test wants."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

__all__ = ["AsgiAnswer", "AsgiClient"]


@dataclass(frozen=True)
class AsgiAnswer:
    """A response: its status, headers (names lowercased, the last of each) and body."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def _scope(method: str, path: str, headers: Iterable[tuple[str, str]], client: str) -> dict[str, Any]:
    route, _, query = path.partition("?")
    raw = [(k.lower().encode(), v.encode()) for k, v in headers]
    if not any(k == b"host" for k, _ in raw):
        raw.insert(0, (b"host", b"127.0.0.1"))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": route,
        "raw_path": route.encode(),
        "query_string": query.encode("latin-1"),
        "root_path": "",
        "headers": raw,
        "client": (client, 50000),
        "server": ("127.0.0.1", 80),
    }


async def _exchange(
    app: Any,
    scope: dict[str, Any],
    body: bytes,
    within: float,
    head_only: bool,
    stalls: bool = False,
    until: Callable[[bytes], bool] | None = None,
) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    done = asyncio.Event()
    delivered = False
    got = bytearray()

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": stalls}
        if not head_only:
            await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            done.set()
        if head_only and message["type"] == "http.response.start":
            done.set()
        if until is not None and message["type"] == "http.response.body":
            got.extend(message.get("body", b""))
            if until(bytes(got)):
                done.set()

    task = asyncio.ensure_future(app(scope, receive, send))
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(done.wait()), within)
    done.set()  # the client hangs up
    if (
        head_only or until is not None
    ):  # and the stream is stopped where it is (its heartbeat could be a while)
        task.cancel()
    try:
        await asyncio.wait_for(task, 10)
    except (TimeoutError, asyncio.CancelledError):
        task.cancel()
    return sent


class AsgiClient:
    """``app`` served on an event loop in a thread of its own, between its lifespan's startup and shutdown."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._lifespan: asyncio.Queue[dict[str, Any]] | None = None
        self._lifespan_task: Any = None

    def __enter__(self) -> AsgiClient:
        self._thread.start()
        self._run(self._startup(), 30)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self._run(self._shutdown(), 30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(30)
            self.loop.close()

    def _run(self, coroutine: Any, timeout: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    async def _startup(self) -> None:
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._lifespan = inbox
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        self._lifespan_task = asyncio.ensure_future(self.app(scope, inbox.get, outbox.put))
        self._outbox = outbox
        await inbox.put({"type": "lifespan.startup"})
        answer = await outbox.get()
        assert answer["type"] == "lifespan.startup.complete", answer

    async def _shutdown(self) -> None:
        assert self._lifespan is not None
        await self._lifespan.put({"type": "lifespan.shutdown"})
        answer = await self._outbox.get()
        assert answer["type"] == "lifespan.shutdown.complete", answer
        await self._lifespan_task

    def request(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        *,
        client: str = "127.0.0.1",
        within: float = 30.0,
        head_only: bool = False,
        stalls: bool = False,
        until: Callable[[bytes], bool] | None = None,
    ) -> AsgiAnswer:
        """``method path`` (with its query) from the address ``client``; ``head_only``: a client that hangs
        up once its request is sent (a long poll answers at once) and takes the status when it comes (a
        stream is stopped there), with the body as far as it got; ``stalls``: a client that sends ``body``,
        says more is coming, and sends nothing more until it is answered; ``until``: a client that hangs up
        once the body so far satisfies it (a stream read as far as a test needs)."""
        pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
        sent = self._run(
            _exchange(self.app, _scope(method, path, pairs, client), body, within, head_only, stalls, until),
            within + 30,
        )
        started = [m for m in sent if m["type"] == "http.response.start"]
        assert started, f"{method} {path[:80]}: no answer within {within} s"
        found = {k.decode().lower(): v.decode("latin-1") for k, v in started[0].get("headers", [])}
        content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        return AsgiAnswer(started[0]["status"], found, content)
