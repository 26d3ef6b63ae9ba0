"""Where OTLP/HTTP trace bodies are parsed: worker processes beside the server's own.

Parsing a request (protobuf to the store's rows) is pure Python work of the same size as storing it, and
one process runs Python on one core at a time. With ``parse_workers`` > 0 (``--parse-workers``; by default
one when the machine has two cores or more) bodies are parsed in that many worker processes while the
server process stores the previous request, so ingest uses two cores. The worker hands back the rows made
ready to store (``_ingest.prepare_body``: merged, their events and trace summaries folded, as the store's
parameters; as ``marshal`` bytes), so the server process, which bounds the rate, only runs the
statements; in-process the same function runs in the thread pool, so nothing else changes: a malformed
body is the same 400.

Each worker has two pipes of its own, bodies in and rows out, which the event loop writes and reads itself
(``asyncio`` pipe transports): no thread and no pickling between the request and its rows. A request is a
header (the body's kind, its length) and the body; a reply is a header (rows, a refusal, a failure) and its
bytes. Requests to one worker are answered in the order they were sent, so a second request waits in the
pipe, not in the server, while the first is parsed. The pipes are widened to 1 MiB where Linux allows
(``_widen``): a request and its rows each cross in one write. Where the platform has no such pipes (not
POSIX) bodies are parsed in-process. A worker that dies while parsing (the OOM killer, a crash) fails the
requests sent to it with a 503 that OTLP exporters retry (never parsed again in the server process: if the
body itself killed the worker it would kill the server), and a worker is started in its place.

Workers are started with ``spawn`` (never ``fork``: the server runs threads) before the server answers,
and exit with it: when their pipe closes, on shutdown here, and on their own within a quarter of a second
when the server process is killed.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import io
import logging
import marshal
import multiprocessing
import os
import signal
import struct
import threading
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any, Final

from starlette.concurrency import run_in_threadpool

from toolspan.errors import ToolspanError
from toolspan.server._ingest import otlp as _ingest
from toolspan.server._store.writes import Prepared

__all__ = ["Parsers"]

_logger = logging.getLogger(__name__)
_START_TIMEOUT_S: Final = 60.0
_STOP_TIMEOUT_S: Final = 5.0
_PARENT_POLL_S: Final = 0.25
# A request of 512 agent spans is about 350 KiB and its rows made ready about 520 KiB. Through a pipe of
# Linux's default 64 KiB each crosses in many writes, the reader woken for each: the round trip of one such
# request took 2.6 to 3.0 ms of CPU, 1.3 ms through pipes of 1 MiB (the most any user may set by default,
# ``/proc/sys/fs/pipe-max-size``) with ``concurrent.futures``' process pool, 0.5 ms through the event loop's
# own pipe transports.
_PIPE_BYTES: Final = 1 << 20
# A request's or a reply's header: one byte (the body's kind; what the reply holds), then a length.
_HEADER: Final = struct.Struct(">cI")
_KINDS: Final = (_ingest.PROTOBUF, _ingest.JSON)
_READY, _ROWS, _REFUSED, _FAILED = b"S", b"R", b"E", b"X"
RETRY: Final = "the parse worker stopped while parsing this request: retry"


def _orphaned(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_PARENT_POLL_S)
    os._exit(0)  # the server was killed: nothing is left to parse for


def _watch_parent(parent: int) -> None:
    """In each worker: exit as soon as the server process is gone (a killed server cannot say so; its end of
    the request pipe closing ends the worker too, once the body it is parsing is done). Ctrl-C reaches the
    whole process group: a worker leaves it to the server, which shuts the workers down."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_orphaned, args=(parent,), daemon=True, name="toolspan-parent-watch").start()


def _read(data: bytes) -> Prepared:
    return Prepared._make(marshal.loads(data))


def _widen(pipes: list[Connection]) -> list[int]:
    """Give each of ``pipes`` ``_PIPE_BYTES`` of buffer; returns their sizes read back. Where a pipe cannot
    be widened (not Linux; a user's pipe memory used up) it keeps its size and works as before, only
    slower: ``[]``, or the sizes they have."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        return []
    set_size, get_size = getattr(fcntl, "F_SETPIPE_SZ", None), getattr(fcntl, "F_GETPIPE_SZ", None)
    if set_size is None or get_size is None:
        return []
    sizes = []
    for pipe in pipes:
        try:
            fcntl.fcntl(pipe.fileno(), set_size, _PIPE_BYTES)
        except OSError as e:
            _logger.debug("toolspan serve: a parse worker's pipe keeps its size: %s", e)
        with contextlib.suppress(OSError):  # (not a pipe: no size to say)
            sizes.append(fcntl.fcntl(pipe.fileno(), get_size))
    return sizes


# --- in the worker process ---------------------------------------------------------------------------


def _exactly(stream: io.FileIO, size: int) -> bytes | None:
    """``size`` bytes from ``stream``; ``None`` when it ends first (the server closed the pipe)."""
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        n = stream.readinto(view[got:])
        if not n:
            return None
        got += n
    return bytes(buffer)


def _send(stream: io.FileIO, tag: bytes, data: bytes) -> None:
    for part in (_HEADER.pack(tag, len(data)), data):
        view = memoryview(part)
        while view:
            view = view[stream.write(view) or 0 :]


def _answer(body: bytes, code: int) -> tuple[bytes, bytes]:
    """The reply to one request: its rows made ready (as ``marshal`` bytes, which the server process reads
    back faster than a pickle), the refusal of a malformed body, or what went wrong."""
    try:
        return _ROWS, marshal.dumps(tuple(_ingest.prepare_body(body, _KINDS[code])))
    except _ingest.IngestError as e:
        return _REFUSED, marshal.dumps((e.status, e.message))
    except Exception:
        return _FAILED, traceback.format_exc().encode("utf-8", "replace")


def _work(requests: Connection, replies: Connection, parent: int) -> None:
    """A worker process: answer each request of ``requests`` on ``replies``, in order, until the server
    closes the pipe (or is gone: a reply it cannot take ends the worker quietly)."""
    _watch_parent(parent)
    with (
        contextlib.suppress(BrokenPipeError),
        open(requests.fileno(), "rb", buffering=0, closefd=False) as into,
        open(replies.fileno(), "wb", buffering=0, closefd=False) as out,
    ):
        _ingest.parse_body(b"", _ingest.PROTOBUF)  # imports the generated OTLP classes before any request
        _send(out, _READY, struct.pack(">I", os.getpid()))
        while (head := _exactly(into, _HEADER.size)) is not None:
            kind, size = _HEADER.unpack(head)
            body = _exactly(into, size)
            if body is None:
                return
            _send(out, *_answer(body, kind[0]))


# --- in the server process ---------------------------------------------------------------------------


class _Stopped(ToolspanError):
    """The worker stopped before it answered."""


class _Writable(asyncio.Protocol):
    """The request pipe's flow control: a write waits while the pipe's transport holds too much."""

    def __init__(self) -> None:
        self.ready = asyncio.Event()
        self.ready.set()

    def pause_writing(self) -> None:
        self.ready.clear()

    def resume_writing(self) -> None:
        self.ready.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.ready.set()


class _Replies(asyncio.Protocol):
    """The reply pipe's reader: each whole reply (its header, then its bytes, joined once) handed to
    ``_Worker.answered``, the pipe's end to ``_Worker.ended``."""

    def __init__(self, worker: _Worker) -> None:
        self._worker = worker
        self._parts: list[bytes] = []
        self._size = 0
        self._head: tuple[bytes, int] | None = None  # the header of the reply being read: (tag, size)

    def data_received(self, data: bytes) -> None:
        self._parts.append(data)
        self._size += len(data)
        while self._size >= (need := _HEADER.size if self._head is None else self._head[1]):
            taken = self._take(need)
            if self._head is None:
                self._head = _HEADER.unpack(taken)
            else:
                (tag, _), self._head = self._head, None
                self._worker.answered(tag, taken)

    def _take(self, size: int) -> bytes:
        parts = self._parts
        whole = b"".join(parts) if len(parts) != 1 else parts[0]
        if len(whole) == size:
            self._parts, self._size = [], 0
            return whole
        self._parts, self._size = [whole[size:]], len(whole) - size
        return whole[:size]

    def connection_lost(self, exc: Exception | None) -> None:
        self._worker.ended()


class _Worker:
    """One worker process, its pipes' transports on the event loop, and the requests it has not answered
    yet, in the order they were sent."""

    def __init__(self, process: Any, requests: Connection, replies: Connection, sizes: list[int]) -> None:
        self.process = process
        self.pid = 0
        self.pipe_bytes = sizes  # its two pipes' sizes (``_widen``)
        self._requests = requests
        self._replies = replies
        self.waiting: collections.deque[asyncio.Future[tuple[bytes, bytes]]] = collections.deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready: asyncio.Future[bytes] | None = None
        self._write: asyncio.WriteTransport | None = None
        self._writable = _Writable()
        self._read: asyncio.ReadTransport | None = None
        self.stopped = False

    async def connect(self) -> None:
        """Take the pipes onto the event loop and wait for the worker to say it is ready."""
        loop = self._loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._read, _ = await loop.connect_read_pipe(lambda: _Replies(self), self._replies)
        self._write, _ = await loop.connect_write_pipe(lambda: self._writable, self._requests)
        (self.pid,) = struct.unpack(">I", await self._ready)

    def answered(self, tag: bytes, data: bytes) -> None:
        """A reply: the worker's first says it is ready; each other answers the request sent first among
        those waiting (a request whose client left is answered all the same)."""
        if tag == _READY and self._ready is not None and not self._ready.done():
            self._ready.set_result(data)
        elif self.waiting:
            future = self.waiting.popleft()
            if not future.done():
                future.set_result((tag, data))

    def ended(self) -> None:
        """The worker's replies ended (it stopped, or its pipe was closed): every request waiting fails."""
        self.stopped = True
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(_Stopped())
        while self.waiting:
            future = self.waiting.popleft()
            if not future.done():
                future.set_exception(_Stopped())

    async def ask(self, body: bytes, kind: str) -> tuple[bytes, bytes]:
        """Send one request; its reply (``_Stopped`` when the worker stops first)."""
        loop, write = self._loop, self._write
        if loop is None or write is None or self.stopped or write.is_closing():
            raise _Stopped()
        future: asyncio.Future[tuple[bytes, bytes]] = loop.create_future()
        self.waiting.append(future)  # (in the order the requests go into the pipe: no await between)
        write.write(_HEADER.pack(bytes([_KINDS.index(kind)]), len(body)))
        write.write(body)
        try:
            await self._writable.ready.wait()
        except BaseException:  # (cancelled while its body waits to go: its reply, when it comes, is dropped)
            future.cancel()
            raise
        return await future

    def stop(self) -> None:
        """End the worker (from any thread): its pipe closed, then ended if it does not exit in time."""
        loop = self._loop
        on_loop = False
        with contextlib.suppress(RuntimeError):
            on_loop = loop is not None and asyncio.get_running_loop() is loop
        if on_loop:
            self._close()
        if self.process.is_alive():
            if not on_loop:
                self.process.terminate()
            self.process.join(_STOP_TIMEOUT_S)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(_STOP_TIMEOUT_S)
        if not on_loop and loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # (the loop stopping meanwhile)
                loop.call_soon_threadsafe(self._close)

    def _close(self) -> None:
        for transport in (self._write, self._read):
            if transport is not None:
                transport.close()
        for pipe in (self._requests, self._replies):
            pipe.close()


class Parsers:
    """Parses request bodies in ``workers`` processes (``0``: in the server process's thread pool)."""

    def __init__(self, workers: int) -> None:
        self._workers = workers if os.name == "posix" else 0  # (the event loop's pipe transports)
        self._live: list[_Worker] = []
        self._closed = False
        self.pids: list[int] = []  # the workers' process ids once started
        self.pipe_bytes: list[int] = []  # the sizes of the workers' pipes (``_widen``)

    async def start(self) -> None:
        """Start the workers and wait until each has imported the parser (the server answers only then);
        workers that cannot start leave parsing in-process, with a warning."""
        if self._workers <= 0 or self._live:
            return
        self._closed = False
        spawning = asyncio.gather(*(self._spawn() for _ in range(self._workers)), return_exceptions=True)
        try:
            results = await asyncio.wait_for(spawning, _START_TIMEOUT_S)
        except Exception as e:  # (the time is up: each spawn, cancelled, ended its worker)
            results = [e]
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            for result in results:
                if not isinstance(result, BaseException):
                    result.stop()
            _logger.warning(
                "toolspan serve: parse workers did not start; parsing in-process", exc_info=failed[0]
            )
            return
        for result in results:
            assert not isinstance(result, BaseException)
            self._add(result)
        _logger.debug("toolspan serve: parse workers %s, pipes of %s bytes", self.pids, self.pipe_bytes)

    async def _spawn(self) -> _Worker:
        context = multiprocessing.get_context("spawn")
        requests_in, requests = context.Pipe(duplex=False)
        replies, replies_out = context.Pipe(duplex=False)
        process = context.Process(
            target=_work, args=(requests_in, replies_out, os.getpid()), name="toolspan-parse", daemon=True
        )
        worker = _Worker(process, requests, replies, _widen([requests, replies]))
        try:
            try:
                await asyncio.get_running_loop().run_in_executor(None, process.start)
            finally:
                requests_in.close()  # (the worker holds its ends: the pipes end when it does)
                replies_out.close()
            await worker.connect()
        except BaseException:
            worker.stop()
            raise
        return worker

    def _add(self, worker: _Worker) -> None:
        self._live.append(worker)
        self._listed()

    def _listed(self) -> None:
        self.pids = sorted(w.pid for w in self._live)
        self.pipe_bytes = [size for w in self._live for size in w.pipe_bytes]

    def close(self) -> None:
        """End the workers (any thread; a second call does nothing)."""
        self._closed = True
        live, self._live = self._live, []
        self.pids, self.pipe_bytes = [], []
        for worker in live:
            worker.stop()

    async def prepare(self, body: bytes, kind: str) -> Prepared:
        """The rows of one ``ExportTraceServiceRequest`` body, made ready to store (``_ingest.prepare_body``;
        ``_ingest.IngestError`` when refused)."""
        if not self._live:
            return await run_in_threadpool(_ingest.prepare_body, body, kind)
        worker = min(self._live, key=lambda w: len(w.waiting))
        try:
            tag, data = await worker.ask(body, kind)
        except _Stopped:
            await self._replace(worker)
            raise _ingest.IngestError(503, RETRY) from None
        if tag == _ROWS:
            return _read(data)
        if tag == _REFUSED:
            status, message = marshal.loads(data)
            raise _ingest.IngestError(status, message)
        raise RuntimeError(f"a parse worker failed:\n{data.decode('utf-8', 'replace')}")

    async def _replace(self, worker: _Worker) -> None:
        """Start a worker in place of one that stopped (once, however many of its requests failed)."""
        if worker not in self._live:
            return
        _logger.warning("toolspan serve: a parse worker stopped; starting it again")
        self._live.remove(worker)
        self._listed()
        worker.stop()
        if self._closed:
            return
        try:
            started = await asyncio.wait_for(self._spawn(), _START_TIMEOUT_S)
        except Exception:
            _logger.warning("toolspan serve: a parse worker did not start again", exc_info=True)
            return
        if self._closed:
            started.stop()
            return
        self._add(started)
