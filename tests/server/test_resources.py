"""What a hostile client or a careless operator can take from a real ``toolspan serve``, and what it gets
back: ``POST /api/ag-ui`` refuses a body over its limit before holding it and cuts off a body that stops;
long polls whose clients hung up give their connection back at once; reading a decision decodes no waiting
call; a commit wakes only the streams it concerns; a decision made on one replica wakes the long poll
waiting on another at once; connections beyond the open-files limit are answered 503, not left to time
out."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server.test_control_hostile import ingest, waiting_span
from tests.server.test_control_live import AUTH, DECIDER_ARGS, DECIDERS, TOKEN, _post
from tests.support.server import HOST, Server, open_files_at_least, running_server, wait_for


def _rss_kib(server: Server) -> int:
    assert server.proc is not None
    status = Path(f"/proc/{server.proc.pid}/status").read_text()
    found = re.search(r"VmRSS:\s+(\d+) kB", status)
    assert found is not None
    return int(found.group(1))


def _answer(sock: socket.socket) -> bytes:
    data = b""
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            data += chunk
    return data


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with running_server(tmp_path, "--read-timeout", "1") as srv:
        yield srv


@pytest.mark.processes
def test_ag_ui_refuses_a_declared_oversize_body_before_it_is_sent(server: Server) -> None:
    with socket.create_connection((HOST, server.port), timeout=10) as sock:
        sock.sendall(
            b"POST /api/ag-ui HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 300000000\r\nConnection: close\r\n\r\n"
        )
        answer = _answer(sock)  # nothing of the body was sent: the answer comes anyway
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"over the size limit" in answer


@pytest.mark.processes
def test_ag_ui_stops_reading_a_streamed_oversize_body_at_its_limit(server: Server) -> None:
    before = _rss_kib(server)
    chunk = b"[" + b"1," * (512 * 1024) + b"1]"  # ~1 MiB of JSON, sent chunked: no length declared
    sent = 0
    with socket.create_connection((HOST, server.port), timeout=10) as sock:
        sock.sendall(
            b"POST /api/ag-ui HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        with contextlib.suppress(OSError):  # the server answers and closes while the body still comes
            for _ in range(96):
                sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                sent += len(chunk)
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    # The server held at most its limit (4 MiB) of the body, not what was sent (tens of MiB).
    assert _rss_kib(server) - before < 24 * 1024, (before, _rss_kib(server), sent)


def _stalled_post(port: int, path: str, headers: str = "") -> bytes:
    """The status of a POST whose body stops after 13 of its 1,000 bytes."""
    with socket.create_connection((HOST, port), timeout=15) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{headers}"
            "Content-Length: 1000\r\nConnection: close\r\n\r\n".encode()
            + b'{"threadId": '
        )
        answer = _answer(sock)  # the socket's own timeout (15 s) is far past the server's (1 s)
    return answer.split(b" ", 2)[1]


@pytest.mark.processes
@pytest.mark.parametrize("path", ["/api/ag-ui", "/v1/traces"])
def test_a_body_that_stops_coming_is_cut_off_with_408(server: Server, path: str) -> None:
    assert _stalled_post(server.port, path) == b"408"


@pytest.mark.processes
@pytest.mark.parametrize("path", ["/api/control/decisions", "/api/control/cancels"])
def test_a_deciders_body_that_stops_coming_is_cut_off_with_408(tmp_path: Path, path: str) -> None:
    with running_server(tmp_path, "--read-timeout", "1", "--token", TOKEN, *DECIDER_ARGS) as server:
        decider = f"Authorization: Bearer {DECIDERS['alice']}\r\n"
        assert _stalled_post(server.port, path, decider) == b"408"
        # Without a decider's token the body is never read: refused at once.
        assert _stalled_post(server.port, path) == b"401"
        assert _stalled_post(server.port, path, f"Authorization: Bearer {TOKEN}\r\n") == b"403"


def _long_poll(port: int, path: str) -> socket.socket:
    sock = socket.create_connection((HOST, port), timeout=10)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode())
    return sock


@pytest.mark.processes
@pytest.mark.parametrize(
    "path",
    [
        "/api/control/decisions/exec_00000000000000ab?trace_id=" + "a" * 32 + "&wait=30",
        "/api/control/cancels?execution_id=exec_00000000000000ab&wait=30",
    ],
)
def test_long_polls_whose_clients_hung_up_give_their_connections_back(tmp_path: Path, path: str) -> None:
    with running_server(tmp_path, "--token", TOKEN, *DECIDER_ARGS, "--max-connections", "20") as server:
        server.headers = dict(AUTH)
        polls = [_long_poll(server.port, path) for _ in range(20)]
        # Every poll holds its connection now (the server is full: one more is a 503), waited for.
        wait_for(lambda: server.request("GET", "/healthz")[0] == 503, "every poll holding its connection")
        for sock in polls:
            sock.close()  # the clients hang up before their 30 s are out
        # Their handlers end with them: the server serves at once, reads and exports alike.
        wait_for(lambda: server.request("GET", "/healthz")[0] == 200, "healthz served", 5)
        status, _, raw = server.request("GET", "/api/traces")
        assert status == 200, raw
        status, _, raw = server.post_otlp(b"{}", "application/json")
        assert status == 200, raw


def _asgi_get(app: Any, path: str, headers: dict[str, str]) -> tuple[int, Any]:
    """One GET through the ASGI application in this process (no server)."""
    path, _, query = path.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1")] + [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    sent: list[dict[str, Any]] = []
    received = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if not received.is_set():
            received.set()
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(body)


@pytest.mark.processes
def test_reading_a_decision_decodes_no_waiting_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """200 calls wait, with large arguments; the long poll of one call's decision (with what a restarted
    call resumes by) reads the decision tables only: no stored span is decoded."""
    from toolspan.server import ServerConfig, build_app, open_store
    from toolspan.server._rows.spans import IngestResult  # noqa: F401
    from toolspan.server._store import decoded as db  # where both engines' reads decode a stored span

    store = open_store(str(tmp_path / "store.db"))
    try:
        from toolspan.bridge.readers import spans_from_document

        big = json.dumps({"rows": ["x" * 1000] * 200})
        doc = {
            "resourceSpans": [
                {
                    "resource": {"attributes": []},
                    "scopeSpans": [
                        {
                            "spans": [
                                waiting_span(f"{n:032x}", f"{n:016x}", call_id=f"c{n}", arguments=big)
                                for n in range(1, 201)
                            ]
                        }
                    ],
                }
            ]
        }
        store.ingest(spans_from_document(doc))
        app, _ = build_app(ServerConfig(db=store.path, token=TOKEN, deciders=(("alice", "a-token"),)), store)
        decoded: list[object] = []
        real = db.decode

        def counting(data: Any) -> Any:
            decoded.append(data)
            return real(data)

        monkeypatch.setattr(db, "decode", counting)
        status, body = _asgi_get(
            app,
            f"/api/control/decisions/exec_{7:016x}?trace_id={7:032x}&wait=0&call_id=c7&tool=transfer&shown=x",
            AUTH,
        )
        assert (status, body["decision"], body["resumes"]) == (200, None, None)
        assert decoded == []
        # The inbox does decode the calls it lists (it shows their arguments), as many as a page holds.
        status, body = _asgi_get(app, "/api/control/waiting?limit=5", AUTH)
        assert status == 200
        assert len(body["waiting"]) == 5
        assert 5 <= len(decoded) <= 11  # (the page's calls, one more to know there is a next page, traces)
    finally:
        store.close()


def test_a_commit_wakes_only_the_streams_it_concerns() -> None:
    """Idle streams of other traces and conversations do not read the store again on a commit; the streams
    of the trace, of its conversation and the all-traces stream do. A stream reads again only when the event
    it waits on is set (or its 60 s heartbeat passes): the commit sets exactly the events of those three."""
    from toolspan.server._rows.cursor import Cursor
    from toolspan.server._streams.events import tail
    from toolspan.server._streams.wakeups import Notifier

    class Store:
        def __init__(self) -> None:
            self.reads: dict[str, int] = {}
            self.changed = threading.Event()

        def events_after(self, cursor: Any, *, trace_id: Any, conversation_id: Any, limit: int) -> list[Any]:
            key = trace_id or conversation_id or "all"
            self.reads[key] = self.reads.get(key, 0) + 1
            self.changed.set()
            return []

    class Recording(Notifier):
        """Which stream waits on which event: the scope it asked for (``None``: every commit)."""

        def __init__(self) -> None:
            super().__init__()
            self.events: list[tuple[str, asyncio.Event]] = []

        def waiter(self, *, traces: Any = None, conversations: Any = ()) -> asyncio.Event:
            traces, conversations = (None if traces is None else list(traces)), list(conversations)
            event = super().waiter(traces=traces, conversations=conversations)
            self.events.append(((traces or conversations or ["all"])[0], event))
            return event

    async def reads_reach(store: Store, want: dict[str, int]) -> None:
        while True:
            store.changed.clear()  # before the look, so no read after it is missed
            if all(store.reads.get(k, 0) >= n for k, n in want.items()):
                return
            await asyncio.to_thread(store.changed.wait, 30)

    async def main() -> tuple[dict[str, int], set[str]]:
        notifier = Recording()
        store = Store()
        scopes = [("t1", None), ("t2", None), (None, "c1"), (None, "c2"), (None, None)]
        scopes += [(f"idle-{n}", None) for n in range(100)]
        streams = [
            tail(store, notifier, Cursor(0), trace_id=t, conversation_id=c, heartbeat_s=60)  # type: ignore[arg-type]
            for t, c in scopes
        ]
        tasks = [asyncio.ensure_future(anext(s, None)) for s in streams]
        keys = [t or c or "all" for t, c in scopes]
        await asyncio.wait_for(reads_reach(store, dict.fromkeys(keys, 1)), 60)
        waiting = list(notifier.events)  # each stream's, taken before its read
        notifier.notify(["t1"], ["c1"])
        woken = {key for key, event in waiting if event.is_set()}
        await asyncio.wait_for(reads_reach(store, dict.fromkeys(woken, 2)), 60)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return store.reads, woken

    reads, woken = asyncio.run(main())
    assert woken == {"t1", "c1", "all"}
    assert {k for k, n in reads.items() if n > 1} == woken  # they read again; the others wait on
    # A commit that cannot say what it wrote (another replica's, too long to name) wakes every stream.
    notifier = Notifier()
    keyed = asyncio.run(_keyed_and_all(notifier))
    assert keyed


async def _keyed_and_all(notifier: Any) -> bool:
    waiters = [notifier.waiter(traces=[f"t{n}"]) for n in range(10)]
    notifier.notify()
    return all(w.is_set() for w in waiters)


@pytest.mark.processes
def test_a_decision_on_one_replica_wakes_the_long_poll_on_another_at_once(
    postgres: Any, tmp_path: Path
) -> None:
    url = postgres.fresh_url()
    args = ("--token", TOKEN, *DECIDER_ARGS)
    first = Server(url, 0, -1, args, tmp_path / "a.log")
    second = Server(url, 0, -1, args, tmp_path / "b.log")
    first.start()
    try:
        second.start()
        for srv in (first, second):
            srv.headers = dict(AUTH)
        ingest(first, [waiting_span("f" * 32, "f" * 16, call_id="toolu_far")])
        (entry,) = first.get_json("/api/control/waiting")["waiting"]
        answer: list[Any] = []

        def poll() -> None:
            started = time.monotonic()
            doc = first.get_json(
                f"/api/control/decisions/{entry['execution_id']}?trace_id={entry['trace_id']}&wait=30"
            )
            answer.append((time.monotonic() - started, doc))

        poller = threading.Thread(target=poll)
        poller.start()
        time.sleep(1.0)  # the poll waits on the first replica
        status, body = _post(
            second,
            "/api/control/decisions",
            {"execution_id": entry["execution_id"], "decision": "deny", "shown": entry["arguments_sha256"]},
        )
        assert status == 200, body
        poller.join(40)
        ((took, doc),) = answer
        assert doc["decision"]["decision"] == "deny"
        # Woken by the other replica's notification, not by the end of its 30 s wait.
        assert took < 15, took
    finally:
        second.stop()
        first.stop()


@pytest.mark.processes
def test_idle_connections_beyond_the_open_files_limit_get_a_503_not_a_timeout(tmp_path: Path) -> None:
    server = Server(tmp_path / "s.db", 0, -1, (), tmp_path / "s.log", open_files=1024)
    server.start()
    # This process opens the 1,100 clients itself; each is closed before the server stops.
    with open_files_at_least(2048), contextlib.ExitStack() as cleanup:
        cleanup.callback(server.stop)
        log = server.log.read_text()
        assert "warning: serving" in log, log
        assert "the open-files limit is 1024" in log
        # Half-open clients (connected, never a byte sent), opened as a burst from ten threads: the server
        # accepts them faster than one by one, which took it past its limit when it refused them only after
        # accepting ("Too many open files" from accept, with a traceback, its port deaf for a second).
        opened: list[socket.socket] = []

        def open_clients() -> None:
            for _ in range(110):
                opened.append(socket.create_connection((HOST, server.port), timeout=10))

        openers = [threading.Thread(target=open_clients) for _ in range(10)]
        for opener in openers:
            opener.start()
        for opener in openers:
            opener.join()
        for client in opened:
            cleanup.callback(client.close)
        assert len(opened) == 1100
        with socket.create_connection((HOST, server.port), timeout=10) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            answer = _answer(sock)
        assert answer.startswith(b"HTTP/1.1 503"), answer[:200]
        assert b"too many open connections" in answer
    assert "Traceback" not in server.log.read_text()
