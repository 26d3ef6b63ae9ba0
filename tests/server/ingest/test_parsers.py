"""OTLP/HTTP trace bodies parsed in worker processes (``toolspan.server._ingest.parsers``): the same rows and
the same refusals as in-process, a worker that dies fails only its request (503, retryable), and workers
end with the server, also when it is killed."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import sys
import time
from pathlib import Path

import pytest

import toolspan
from tests.support.server import otlp_body, running_server
from toolspan.server._ingest import otlp as _ingest
from toolspan.server._ingest import parsers
from toolspan.server._ingest.parsers import Parsers, _widen
from toolspan.server._store.writes import Prepared
from toolspan.testing import capture_spans


def _body() -> bytes:
    @toolspan.tool
    def lookup(city: str, days: int) -> dict[str, object]:
        return {"city": city, "days": days}

    with capture_spans() as finished, toolspan.agent("planner", conversation_id="c-1"):
        lookup("Paris", 1)
        lookup("Oslo", 2)
    return otlp_body(finished())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (ended, not yet reaped by its parent) counts as ended; so does one reaped meanwhile.
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_gone(pids: list[int], timeout_s: float = 20.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        alive = [p for p in pids if _alive(p)]
        if not alive:
            return []
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found += [int(p) for p in task.read_text().split()]
    return found


RETRY = "the parse worker stopped while parsing this request: retry"


def _worker(server_pid: int) -> int:
    """The parse worker among the server's children (not spawn's resource tracker)."""
    for pid in _children(server_pid):
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        if not any(b"resource_tracker" in part for part in cmdline):
            return pid
    raise AssertionError("the server has no parse worker")


@pytest.mark.processes
def test_a_worker_parses_exactly_what_the_server_parses_in_process() -> None:
    body = _body()

    async def run() -> tuple[list[int], Prepared, object, Prepared]:
        parsers = Parsers(1)
        await parsers.start()
        try:
            pids = list(parsers.pids)
            rows = await parsers.prepare(body, _ingest.PROTOBUF)
            with pytest.raises(_ingest.IngestError) as refused:
                await parsers.prepare(b"\xff\x00 not protobuf", _ingest.PROTOBUF)
            json_rows = await parsers.prepare(b'{"resourceSpans": []}', _ingest.JSON)
        finally:
            parsers.close()
        assert parsers.pids == []
        return pids, rows, refused.value, json_rows

    pids, rows, refused, json_rows = asyncio.run(run())
    assert len(pids) == 1
    assert pids[0] != os.getpid()
    assert rows == _ingest.prepare_body(body, _ingest.PROTOBUF)
    assert rows.accepted == 3
    with pytest.raises(_ingest.IngestError) as local:
        _ingest.prepare_body(b"\xff\x00 not protobuf", _ingest.PROTOBUF)
    assert isinstance(refused, _ingest.IngestError)
    assert (
        (refused.status, refused.message)
        == (local.value.status, local.value.message)
        == (400, str(local.value))
    )
    assert json_rows == _ingest.prepare_body(b'{"resourceSpans": []}', _ingest.JSON)
    assert json_rows.accepted == 0
    assert _wait_gone(pids) == []


def _big_body(spans: int, text_bytes: int) -> bytes:
    """A request of ``spans`` tool spans, each with a ``text_bytes`` argument (captured up to its limit)."""

    @toolspan.tool
    def write(text: str) -> int:
        return len(text)

    with capture_spans() as finished, toolspan.agent("writer"):
        for n in range(spans):
            write(f"{n:04d}" + "x" * text_bytes)
    return otlp_body(finished())


def _pipe_max() -> int:
    return int(Path("/proc/sys/fs/pipe-max-size").read_text())


@pytest.mark.processes
@pytest.mark.skipif(
    not sys.platform.startswith("linux") or _pipe_max() < 1 << 20, reason="Linux's pipe sizes, up to 1 MiB"
)
def test_the_pools_pipes_are_widened_and_a_body_larger_than_them_parses_the_same() -> None:
    body = _big_body(40, 64 * 1024)
    assert len(body) > 1 << 20  # larger than the widened pipe too: it crosses in several writes

    async def run() -> tuple[list[int], Prepared]:
        parsers = Parsers(1)
        await parsers.start()
        try:
            widened = list(parsers.pipe_bytes)
            rows = await parsers.prepare(body, _ingest.PROTOBUF)
        finally:
            parsers.close()
        assert parsers.pipe_bytes == []
        return widened, rows

    widened, rows = asyncio.run(run())
    # Bodies to the worker and rows back: a request of 512 spans (about 350 KiB, its rows 520) in one write.
    assert widened == [1 << 20, 1 << 20]
    assert rows == _ingest.prepare_body(body, _ingest.PROTOBUF)
    assert rows.accepted == 41


def test_what_is_not_a_pipe_is_left_as_it_is() -> None:
    ends = multiprocessing.Pipe(duplex=True)  # a socket pair: no pipe size to set or say
    try:
        assert _widen(list(ends)) == []
    finally:
        for end in ends:
            end.close()


def test_no_workers_parses_in_process() -> None:
    body = _body()

    async def run() -> tuple[list[int], Prepared]:
        parsers = Parsers(0)
        await parsers.start()
        rows = await parsers.prepare(body, _ingest.PROTOBUF)
        parsers.close()
        return parsers.pids, rows

    pids, rows = asyncio.run(run())
    assert pids == []
    assert rows == _ingest.prepare_body(body, _ingest.PROTOBUF)


@pytest.mark.processes
def test_a_worker_that_dies_fails_its_request_with_503_and_is_started_again() -> None:
    body = _body()

    async def run() -> tuple[list[int], _ingest.IngestError, list[int], Prepared]:
        parsers = Parsers(1)
        await parsers.start()
        try:
            first = list(parsers.pids)
            os.kill(first[0], signal.SIGKILL)
            assert _wait_gone(first) == []
            with pytest.raises(_ingest.IngestError) as failed:
                await parsers.prepare(body, _ingest.PROTOBUF)
            second = list(parsers.pids)
            # (the pipes' sizes listed are the live worker's two, not the stopped one's as well)
            assert len(parsers.pipe_bytes) == (2 if sys.platform.startswith("linux") else 0)
            rows = await parsers.prepare(body, _ingest.PROTOBUF)
        finally:
            parsers.close()
        return first, failed.value, second, rows

    first, failed, second, rows = asyncio.run(run())
    assert (failed.status, failed.message) == (503, RETRY)
    assert len(second) == 1
    assert second != first
    assert rows == _ingest.prepare_body(body, _ingest.PROTOBUF)


@pytest.mark.processes
def test_the_server_parses_in_its_worker_and_the_worker_ends_when_the_server_is_killed(
    tmp_path: Path,
) -> None:
    body = _body()
    with running_server(tmp_path, "--grpc-port", "-1", "--parse-workers", "1") as server:
        assert server.proc is not None
        workers = _children(server.proc.pid)
        assert len(workers) >= 1  # the worker (and spawn's resource tracker)
        status, _, _ = server.post_otlp(body)
        assert status == 200
        assert server.counts() == {"spans": 3, "traces": 1}
        # The server's requests go through its worker: with the worker killed, a request fails (503,
        # retryable) and stores nothing; the worker is started again and the retry is stored.
        worker = _worker(server.proc.pid)
        os.kill(worker, signal.SIGKILL)
        assert _wait_gone([worker]) == []
        again = _body()
        status, _, reply = server.post_otlp(again)
        assert (status, reply) == (503, _ingest.status_body(_ingest.PROTOBUF, 14, RETRY))
        assert server.counts() == {"spans": 3, "traces": 1}
        assert server.post_otlp(again)[0] == 200
        assert server.counts() == {"spans": 6, "traces": 2}
        workers = _children(server.proc.pid)
        server.kill()
    assert _wait_gone(workers) == []


@pytest.mark.processes
def test_parse_workers_zero_starts_no_process(tmp_path: Path) -> None:
    with running_server(tmp_path, "--grpc-port", "-1", "--parse-workers", "0") as server:
        assert server.proc is not None
        assert _children(server.proc.pid) == []
        status, _, _ = server.post_otlp(_body())
        assert status == 200
        assert server.counts() == {"spans": 3, "traces": 1}


def test_replies_are_read_whole_however_the_pipe_cuts_them() -> None:
    # The reply pipe's reader (``parsers._Replies``): replies cut anywhere, several in one read, an empty
    # one; each handed on whole, in order, and the pipe's end said once.
    class Heard:
        def __init__(self) -> None:
            self.replies: list[tuple[bytes, bytes]] = []
            self.ends = 0

        def answered(self, tag: bytes, data: bytes) -> None:
            self.replies.append((tag, data))

        def ended(self) -> None:
            self.ends += 1

    sent = [(b"R", b"rows" * 1000), (b"E", b""), (b"X", b"why"), (b"R", bytes(range(256)) * 9)]
    stream = b"".join(parsers._HEADER.pack(tag, len(data)) + data for tag, data in sent)
    for cut in (1, 2, 5, 4096, len(stream)):
        heard = Heard()
        replies = parsers._Replies(heard)  # type: ignore[arg-type]
        for at in range(0, len(stream), cut):
            replies.data_received(stream[at : at + cut])
        replies.connection_lost(None)
        assert (heard.replies, heard.ends) == (sent, 1), cut
