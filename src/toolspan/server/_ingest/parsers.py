"""Where OTLP/HTTP trace bodies are parsed: worker processes beside the server's own.

Parsing a request (protobuf to the store's rows) is pure Python work of the same size as storing it, and
one process runs Python on one core at a time. With ``parse_workers`` > 0 (``--parse-workers``; by default
one when the machine has two cores or more) bodies are parsed in that many worker processes while the
server process stores the previous request, so ingest uses two cores. The worker hands back the rows made
ready to store (``_ingest.prepare_body``: merged, their events and trace summaries folded, as the store's
parameters; as ``marshal`` bytes), so the server process, which bounds the rate, only runs the
statements; in-process the same function runs in the thread pool, so nothing else changes: a malformed
body is the same 400. The pool's pipes are widened to 1 MiB where Linux allows (``_widen_pipes``): a
request and its rows each cross in one write. A worker that dies while parsing (the OOM killer, a crash)
fails only that request, with a 503 that OTLP exporters retry (never parsed again in the server process:
if the body itself killed the worker it would kill the server), and the workers are started again.

Workers are started with ``spawn`` (never ``fork``: the server runs threads) before the server answers,
and exit with it: on shutdown here, and on their own within a quarter of a second when the server process
is killed.
"""

from __future__ import annotations

import asyncio
import logging
import marshal
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Final

from starlette.concurrency import run_in_threadpool

from toolspan.server._ingest import otlp as _ingest
from toolspan.server._store.writes import Prepared

__all__ = ["Parsers"]

_logger = logging.getLogger(__name__)
_START_TIMEOUT_S: Final = 60.0
_PARENT_POLL_S: Final = 0.25
# A request of 512 agent spans is about 350 KiB and its rows made ready about 520 KiB. Through a pipe of
# Linux's default 64 KiB each crosses in many writes, the reader woken for each: the round trip of one such
# request took 2.6 to 3.0 ms of CPU, 1.3 ms through pipes of 1 MiB (the most any user may set by default,
# ``/proc/sys/fs/pipe-max-size``).
_PIPE_BYTES: Final = 1 << 20


def _orphaned(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_PARENT_POLL_S)
    os._exit(0)  # the server was killed: nothing is left to parse for


def _watch_parent(parent: int) -> None:
    """In each worker: exit as soon as the server process is gone (a killed server cannot say so; the
    worker's task pipe stays open because the worker holds both of its ends). Ctrl-C reaches the whole
    process group: a worker leaves it to the server, which shuts the workers down."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_orphaned, args=(parent,), daemon=True, name="toolspan-parent-watch").start()


def _prepared(body: bytes, kind: str) -> bytes:
    """In a worker: ``_ingest.prepare_body`` as ``marshal`` bytes (its lists, dicts, tuples, strings, bytes
    and integers), which the server process reads back faster than their pickle (``_read``)."""
    return marshal.dumps(tuple(_ingest.prepare_body(body, kind)))


def _read(data: bytes) -> Prepared:
    return Prepared._make(marshal.loads(data))


def _widen_pipes(pool: Any) -> list[int]:
    """Give ``pool``'s two pipes (bodies to the workers, their rows back) ``_PIPE_BYTES`` of buffer; returns
    their sizes read back. Where the pipes cannot be reached (another Python's executor) or widened (not
    Linux; a user's pipe memory used up) they keep their size and work as before, only slower: ``[]``, or
    the sizes they have."""
    try:
        import fcntl
    except ImportError:  # Windows
        return []
    set_size, get_size = getattr(fcntl, "F_SETPIPE_SZ", None), getattr(fcntl, "F_GETPIPE_SZ", None)
    # The executor's own queues (``concurrent.futures.process``): not public, so looked up with care. Each
    # pipe by its end in the server process: the call queue's writer, the result queue's reader.
    pipes = (("_call_queue", "_writer"), ("_result_queue", "_reader"))
    found = [getattr(getattr(getattr(pool, q, None), end, None), "fileno", None) for q, end in pipes]
    filenos = [f for f in found if callable(f)]
    if set_size is None or get_size is None or len(filenos) != len(pipes):
        return []
    sizes = []
    for fileno in filenos:
        fd = fileno()
        try:
            fcntl.fcntl(fd, set_size, _PIPE_BYTES)
        except OSError as e:
            _logger.debug("toolspan serve: a parse worker's pipe keeps its size: %s", e)
        sizes.append(fcntl.fcntl(fd, get_size))
    return sizes


def _ready() -> int:
    _ingest.parse_body(b"", _ingest.PROTOBUF)  # imports the generated OTLP classes before any request
    return os.getpid()


class Parsers:
    """Parses request bodies in ``workers`` processes (``0``: in the server process's thread pool)."""

    def __init__(self, workers: int) -> None:
        self._workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self.pids: list[int] = []  # the workers' process ids once started
        self.pipe_bytes: list[int] = []  # the sizes of the pool's two pipes (``_widen_pipes``)

    async def start(self) -> None:
        """Start the workers and wait until each has imported the parser (the server answers only then);
        workers that cannot start leave parsing in-process, with a warning."""
        if self._workers <= 0 or self._pool is not None:
            return
        pool = ProcessPoolExecutor(
            self._workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_watch_parent,
            initargs=(os.getpid(),),
        )
        try:
            ready = [asyncio.wrap_future(pool.submit(_ready)) for _ in range(self._workers)]
            pids = await asyncio.wait_for(asyncio.gather(*ready), _START_TIMEOUT_S)
        except Exception:
            _logger.warning("toolspan serve: parse workers did not start; parsing in-process", exc_info=True)
            pool.shutdown(wait=False, cancel_futures=True)
            return
        self._pool = pool
        self.pids = sorted(set(pids))
        self.pipe_bytes = _widen_pipes(pool)

    def close(self) -> None:
        pool, self._pool = self._pool, None
        self.pids, self.pipe_bytes = [], []
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    async def prepare(self, body: bytes, kind: str) -> Prepared:
        """The rows of one ``ExportTraceServiceRequest`` body, made ready to store (``_ingest.prepare_body``;
        ``_ingest.IngestError`` when refused)."""
        pool = self._pool
        if pool is not None:
            try:
                return _read(await asyncio.wrap_future(pool.submit(_prepared, body, kind)))
            except BrokenProcessPool:
                _logger.warning("toolspan serve: a parse worker stopped; starting it again")
                if self._pool is pool:
                    self._pool = None
                    self.pids, self.pipe_bytes = [], []
                    pool.shutdown(wait=False, cancel_futures=True)
                    await self.start()
                raise _ingest.IngestError(
                    503, "the parse worker stopped while parsing this request: retry"
                ) from None
        return await run_in_threadpool(_ingest.prepare_body, body, kind)
