"""Replicas of ``toolspan serve`` sharing one real PostgreSQL store (``--db postgresql://...``): one schema
when they start together, a resend to another replica stored once, a pending record and its ended record
merged across replicas, streams global (a span ingested by one replica reaches a client of another, a
cursor of one resumes on another, text deltas reach every replica), retention once for the cluster; and
three replicas taking 20,000 spans from four senders while one replica is SIGKILLed and restarted and
PostgreSQL itself restarted: every acknowledged span stored exactly once, and stream clients moving
between replicas receive every event exactly once, in order. (The 200,000-span run is
``benchmarks/bench_replicas.py --chaos``: minutes on two cores, not a unit test.)"""

from __future__ import annotations

import http.client
import json
import os
import queue
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan

import toolspan
from tests.support.paths import APPS
from tests.support.postgres import Postgres
from tests.support.server import HOST, Server, SseEvent, otlp_body, sdk_env, sse_stream, wait_for
from toolspan.bridge.readers import from_readable_spans
from toolspan.bridge.views import apply_page_delta
from toolspan.exporters.pending import pending_record
from toolspan.server._rows.cursor import Cursor
from toolspan.server._store.postgres import PostgresStore
from toolspan.testing import capture_spans

STREAM_APP = APPS / "server_stream_app.py"


def _tool_spans(count: int, traces: int = 1) -> list[ReadableSpan]:
    """``count`` real tool spans (``@toolspan.tool``), spread over ``traces`` traces (one agent each)."""

    @toolspan.tool
    def step(i: int) -> int:
        return i

    with capture_spans() as finished:
        per = count // traces
        for t in range(traces):
            with toolspan.agent(f"agent-{t}", conversation_id=f"conv-{t % 3}"):
                for i in range(per):
                    step(t * per + i)
    return [s for s in finished() if s.name.startswith("execute_tool")]


@pytest.fixture
def db(postgres: Postgres) -> str:
    return postgres.fresh_url()


@pytest.fixture
def replicas(tmp_path: Path, db: str) -> Iterator[list[Server]]:
    servers = [Server(db, 0, -1, (), tmp_path / f"replica{i}.log") for i in range(2)]
    try:
        for server in servers:
            server.start()
        yield servers
    finally:
        for server in servers:
            server.stop()


def _events(stream: Iterator[SseEvent], count: int) -> list[SseEvent]:
    out: list[SseEvent] = []
    for event in stream:
        if event.event in ("act", "observe", "text_delta"):
            out.append(event)
            if len(out) == count:
                return out
    return out


@pytest.mark.processes
def test_replicas_starting_together_on_an_empty_database_come_up_with_one_schema(
    tmp_path: Path, postgres: Postgres
) -> None:
    # In-process first, many at once (without the advisory lock, concurrent CREATE TABLE IF NOT EXISTS
    # fails on PostgreSQL's catalog), then two real servers started at the same moment.
    url = postgres.fresh_url()
    barrier = threading.Barrier(4)
    opened: list[PostgresStore] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        barrier.wait()
        try:
            opened.append(PostgresStore(url, pool_size=1))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for store in opened:
        store.close()
    assert (errors, len(opened)) == ([], 4)

    url = postgres.fresh_url()
    servers = [Server(url, 0, -1, (), tmp_path / f"s{i}.log") for i in range(2)]
    starts = [threading.Thread(target=s.start) for s in servers]
    try:
        for thread in starts:
            thread.start()
        for thread in starts:
            thread.join(60)
        assert [s.get_json("/healthz")["status"] for s in servers] == ["ok", "ok"]
        assert sorted(servers[0].query("SELECT part, version FROM schema_versions")) == [
            ("control", 2),
            ("core", 4),
        ]
        tables = servers[1].query(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
        )
        assert [t[0] for t in tables] == [
            "control_cancels",
            "control_decisions",
            "control_polls",
            "events",
            "logs",
            "meta",
            "schema_versions",
            "spans",
            "traces",
        ]
    finally:
        for server in servers:
            server.stop()
    for server in servers:
        assert "rror" not in server.log.read_text()


@pytest.mark.processes
def test_a_span_ingested_by_one_replica_reaches_a_stream_client_of_another(replicas: list[Server]) -> None:
    a, b = replicas
    [span] = _tool_spans(1)
    stream = sse_stream(b, "/api/stream", comments=True)
    assert next(stream) == SseEvent(None, "comment", "connected")
    sent = time.monotonic()
    assert a.post_otlp(otlp_body([span]))[0] == 200
    act, observe = _events(stream, 2)
    took = time.monotonic() - sent
    stream.close()
    assert [act.event, observe.event] == ["act", "observe"]
    assert act.json()["execution_id"] == f"exec_{span.context.span_id:016x}"
    assert took < 10  # woken by the notification, well before the 15 s heartbeat
    # The cursor b issued resumes on a: exactly the event after it.
    again = sse_stream(a, "/api/stream", last_event_id=act.id)
    [resumed] = _events(again, 1)
    again.close()
    assert (resumed.id, resumed.event) == (observe.id, "observe")


@pytest.mark.processes
def test_a_resend_to_another_replica_is_stored_once_and_records_merge_across_replicas(
    replicas: list[Server],
) -> None:
    a, b = replicas
    spans = _tool_spans(3)
    body = otlp_body(spans)
    assert a.post_otlp(body)[0] == 200
    assert b.post_otlp(body)[0] == 200
    assert a.counts()["spans"] == b.counts()["spans"] == 3
    # A running tool's pending record to a, its ended record to b: one span, act then observe.
    [tool] = _tool_spans(1)
    trace_id = f"{tool.context.trace_id:032x}"
    assert a.post_otlp(otlp_body([pending_record(tool)]))[0] == 200
    rows = b.get_json(f"/api/traces?q={trace_id}")["traces"]
    assert [(r["state"], r["tool_calls"]) for r in rows] == [("RUNNING", 1)]
    assert b.post_otlp(otlp_body([tool]))[0] == 200
    events = a.get(f"/api/traces/{trace_id}/events").decode().splitlines()
    assert [json.loads(line)["type"] for line in events] == ["act", "observe"]
    assert a.query(f"SELECT spans, open_tools FROM traces WHERE trace_id = '{trace_id}'") == [(1, 0)]


@pytest.mark.processes
def test_a_progress_stream_on_one_replica_follows_a_trace_ingested_by_another(replicas: list[Server]) -> None:
    a, b = replicas
    [tool] = _tool_spans(1)
    trace_id = f"{tool.context.trace_id:032x}"
    assert a.post_otlp(otlp_body([pending_record(tool)]))[0] == 200
    stream = sse_stream(b, f"/api/traces/{trace_id}/progress/stream", comments=True)
    kinds: list[str] = []
    for event in stream:
        if event.event == "progress":
            kinds.append(event.json()["event"]["type"])
            if kinds == ["tool:start"]:
                assert a.post_otlp(otlp_body([tool]))[0] == 200  # the ended record, to the other replica
            if "tool:end" in kinds:
                break
    stream.close()
    assert kinds[:1] == ["tool:start"]
    assert "tool:end" in kinds


@pytest.mark.processes
def test_a_page_stream_on_one_replica_follows_a_trace_ingested_by_another(replicas: list[Server]) -> None:
    a, b = replicas
    [tool] = _tool_spans(1)
    trace_id = f"{tool.context.trace_id:032x}"
    assert a.post_otlp(otlp_body([pending_record(tool)]))[0] == 200
    stream = sse_stream(b, f"/api/traces/{trace_id}/page/stream")
    first = next(stream)
    assert first.event == "page"
    assert [s["state"] for s in first.json()["steps"]] == ["RUNNING"]
    assert a.post_otlp(otlp_body([tool]))[0] == 200  # the ended record, to the other replica
    delta = next(stream)
    stream.close()
    assert delta.event == "delta"
    assert apply_page_delta(first.json(), delta.json()) == json.loads(b.get(f"/api/traces/{trace_id}/page"))
    assert [s["state"] for s in apply_page_delta(first.json(), delta.json())["steps"]] == ["COMPLETED"]


@pytest.mark.processes
def test_text_with_nul_characters_is_stored_and_found(replicas: list[Server]) -> None:
    # OTLP strings may hold NUL; PostgreSQL's text cannot: stored (the record exactly), listed, found.
    from opentelemetry import trace

    a, b = replicas
    with capture_spans() as finished:
        tracer = trace.get_tracer("nul")
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t\x00ol"}
        with tracer.start_as_current_span("execute_tool t\x00ol", attributes=attributes):
            pass
    [span] = finished()
    assert a.post_otlp(otlp_body([span]))[0] == 200
    trace_id = f"{span.context.trace_id:032x}"
    for path in ("/api/traces?tool=t%00ol", "/api/traces?q=%00", "/api/traces?service=%00"):
        status, _, body = b.request("GET", path)
        assert status == 200, (path, body)
    assert [r["trace_id"] for r in b.get_json("/api/traces?tool=t%00ol")["traces"]] == [trace_id]
    [event] = [json.loads(line) for line in b.get(f"/api/traces/{trace_id}/events").splitlines()][:1]
    assert event["tool_name"] == "t\x00ol"


@pytest.mark.processes
def test_text_deltas_reach_stream_clients_of_every_replica(tmp_path: Path, replicas: list[Server]) -> None:
    a, b = replicas
    on_a = sse_stream(a, "/api/stream", comments=True)
    on_b = sse_stream(b, "/api/stream", comments=True)
    assert (next(on_a).data, next(on_b).data) == ("connected", "connected")
    # A real application streaming text inside a running tool, exporting to replica a only.
    env = {**sdk_env(a, "http/protobuf"), "TOOLSPAN_PENDING_SPANS": "true", "OTEL_BLRP_SCHEDULE_DELAY": "50"}
    app = subprocess.Popen([sys.executable, str(STREAM_APP), str(tmp_path), "1"], env=env)
    try:
        seen = {
            name: [(e.event, e.json().get("delta")) for e in _events(stream, 3)]
            for name, stream in (("a", on_a), ("b", on_b))
        }
    finally:
        (tmp_path / "release-0").write_text("1")
        assert app.wait(60) == 0
        on_a.close()
        on_b.close()
    for name in ("a", "b"):
        assert sorted(seen[name], key=str) == sorted(
            [("act", None), ("text_delta", "step 0 "), ("text_delta", "thinking")], key=str
        ), name
    assert [d for kind, d in seen["b"] if kind == "text_delta"] == ["step 0 ", "thinking"]
    assert b.get_json("/healthz")["relayed_text_deltas"] == 2


def test_a_delta_longer_than_a_notification_goes_in_pieces_that_join_to_it() -> None:
    from toolspan.bridge.internal import LogRecord
    from toolspan.server._store.changes import delta_payloads

    text = "é" * 3000 + "\\" * 2000 + "x" * 9000
    records = [
        LogRecord("a" * 32, "b" * 16, 1, "toolspan.text_delta", {}, text),
        *(LogRecord("a" * 32, "b" * 16, 2, "toolspan.text_delta", {}, f"small {i}") for i in range(50)),
    ]
    payloads = delta_payloads("me", records)
    assert all(len(p.encode()) < 8000 for p in payloads)
    pieces = [r for p in payloads for r in json.loads(p)["records"]]
    assert "".join(r[5] for r in pieces if r[2] == 1) == text
    assert [r[5] for r in pieces if r[2] == 2] == [f"small {i}" for i in range(50)]
    assert {json.loads(p)["origin"] for p in payloads} == {"me"}


@pytest.mark.processes
def test_retention_keeps_the_newest_traces_of_the_cluster(tmp_path: Path, db: str) -> None:
    spans = _tool_spans(40, traces=4)
    servers = [Server(db, 0, -1, ("--max-spans", "20"), tmp_path / f"r{i}.log") for i in range(3)]
    try:
        for server in servers:
            server.start()
        for i in range(0, 40, 10):  # one trace per request, to the replicas in turn
            assert servers[i // 10 % 3].post_otlp(otlp_body(spans[i : i + 10]))[0] == 200
        wait_for(lambda: servers[0].counts()["spans"] <= 20, "retention")
        kept = {f"{s.context.trace_id:032x}" for s in spans[20:]}
        assert {r["trace_id"] for r in servers[1].get_json("/api/traces")["traces"]} == kept
    finally:
        for server in servers:
            server.stop()


@pytest.mark.processes
def test_a_sweep_runs_on_one_replica_at_a_time_and_once_a_second_for_the_cluster(db: str) -> None:
    # The third replica's interval has always passed; the first two's (an hour) never does.
    stores = [PostgresStore(db, pool_size=2, prune_every_s=s) for s in (3600, 3600, 0)]
    try:
        for t in range(6):
            stores[t % 3].ingest(from_readable_spans(_tool_spans(5)))
        barrier = threading.Barrier(3)
        dropped: list[int] = []

        def sweep(store: PostgresStore) -> None:
            barrier.wait()
            dropped.append(store.prune(max_age_ns=None, max_spans=10))

        threads = [threading.Thread(target=sweep, args=(s,)) for s in stores]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        # One replica swept (4 of 6 traces dropped); the others found it sweeping or just swept.
        assert sorted(dropped) == [0, 0, 4]
        stores[0].ingest(from_readable_spans(_tool_spans(5)))
        # Within its interval of the last sweep, whichever replica swept: none now.
        assert stores[1].prune(max_age_ns=None, max_spans=10) == 0
        assert stores[2].prune(max_age_ns=None, max_spans=10) == 1  # past its interval: one now
        assert stores[0].counts() == {"spans": 10, "traces": 2}
    finally:
        for store in stores:
            store.close()


@pytest.mark.processes
def test_the_database_url_comes_from_the_environment_when_db_is_not_given(tmp_path: Path, db: str) -> None:
    env = {**os.environ, "TOOLSPAN_DATABASE_URL": db}
    log = tmp_path / "log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "toolspan", "serve", "--port", "0", "--grpc-port", "-1"],
            stdout=out,
            stderr=out,
            env=env,
            cwd=tmp_path,
        )
    try:
        wait_for(lambda: "store postgresql://" in log.read_text(), "the banner")
    finally:
        proc.terminate()
        proc.wait(10)
    assert not (tmp_path / "toolspan.db").exists()


# --- many spans, a replica killed, the database restarted ---------------------------------------------


def _post(server: Server, body: bytes) -> int:
    conn = http.client.HTTPConnection(HOST, server.port, timeout=10)
    try:
        conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


@pytest.mark.processes
def test_three_replicas_four_senders_a_replica_killed_and_the_database_restarted(
    tmp_path: Path, postgres: Postgres
) -> None:
    # benchmarks/bench_replicas.py --chaos 200000 runs this test at 200,000 spans.
    total, per_batch = int(os.environ.get("TOOLSPAN_TEST_REPLICA_SPANS", "20000")), 200
    spans = _tool_spans(total, traces=200)
    assert len(spans) == total
    batches = [otlp_body(spans[i : i + per_batch]) for i in range(0, total, per_batch)]
    url = postgres.fresh_url()
    servers = [Server(url, 0, -1, (), tmp_path / f"replica{i}.log") for i in range(3)]
    for server in servers:
        server.start()
    work: queue.Queue[int] = queue.Queue()
    for n in range(len(batches)):
        work.put(n)
    acked: list[int] = []
    retried = [0]
    stop = threading.Event()
    failures: list[BaseException] = []

    def sender(k: int) -> None:
        rng = random.Random(k)
        while not stop.is_set():
            try:
                n = work.get_nowait()
            except queue.Empty:
                return
            target = rng.randrange(3)
            while not stop.is_set():
                try:
                    if _post(servers[target], batches[n]) == 200:
                        acked.append(n)
                        break
                except (OSError, http.client.HTTPException):
                    pass
                retried[0] += 1  # refused, 503 or cut off: the sender retries, on another replica
                target = (target + 1) % 3
                time.sleep(0.05)

    expected = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in spans}
    received: list[tuple[Cursor, str, str]] = []

    def client() -> None:
        """Reads the all-traces stream from its start, moving to the next replica every 3,000 events (and
        whenever its replica dies), resuming with Last-Event-ID."""
        last: str | None = None
        replica = 0
        try:
            while len(received) < 2 * total and not stop.is_set():
                path = "/api/stream" if last is not None else "/api/stream?from=start"
                taken = 0
                try:
                    for event in sse_stream(servers[replica], path, last_event_id=last, timeout=5):
                        if event.event == "reset":
                            raise AssertionError(f"reset: {event.data}")
                        if event.event not in ("act", "observe"):
                            continue
                        assert event.id is not None
                        cursor = Cursor.parse(event.id)
                        assert cursor is not None
                        received.append((cursor, cursor.trace_id, cursor.span_id))
                        last = event.id
                        taken += 1
                        if taken == 3000 or len(received) >= 2 * total:
                            break
                except (OSError, http.client.HTTPException, AssertionError) as e:
                    if isinstance(e, AssertionError):
                        raise
                    time.sleep(0.05)
                replica = (replica + 1) % 3
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=sender, args=(k,)) for k in range(4)]
    threads.append(threading.Thread(target=client))
    started = time.monotonic()
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda: len(acked) >= len(batches) // 4, "a quarter of the batches", 120)
        servers[1].kill()
        wait_for(lambda: len(acked) >= len(batches) // 2, "half of the batches", 120)
        servers[1].start()
        wait_for(lambda: len(acked) >= 3 * len(batches) // 4, "three quarters", 120)
        postgres.restart("immediate")
        for thread in threads[:4]:
            thread.join(180)
        threads[4].join(180)
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    elapsed = time.monotonic() - started
    try:
        assert failures == []
        assert sorted(acked) == list(range(len(batches)))
        assert servers[0].query("SELECT count(*), count(DISTINCT (trace_id, span_id)) FROM spans") == [
            (total, total)
        ]
        stored = set(servers[2].query("SELECT trace_id, span_id FROM spans"))
        assert stored == expected
        # Summary rows counted every span once (a retried request added nothing).
        per_trace = total // 200
        assert servers[0].query("SELECT sum(spans), sum(tools), min(spans), max(spans) FROM traces") == [
            (total, total, per_trace, per_trace)
        ]
        # Each span's act and observe: one row each, or both in one (phase 2: it arrived ended).
        events = "SELECT sum(CASE WHEN phase = 2 THEN 2 ELSE 1 END) FROM events"
        assert servers[0].query(events) == [(2 * total,)]
        # The client, across replicas and restarts: every event once, in cursor order.
        cursors = [r[0] for r in received]
        assert cursors == sorted(cursors)
        assert len(set(cursors)) == len(cursors) == 2 * total
        assert {(t, s) for _, t, s in received} == expected
    finally:
        for server in servers:
            server.stop()
    print(
        f"\n{total:,} spans over 3 replicas with a kill and a database restart: {elapsed:.1f} s,"
        f" {retried[0]} retried requests"
    )


@pytest.mark.processes
def test_a_database_that_is_down_is_a_503_to_retry_and_unreachable_at_start_one_line(tmp_path: Path) -> None:
    from tests.support.postgres import bin_dir

    binaries = bin_dir()
    assert binaries is not None
    own = Postgres(binaries)  # this test stops its server: not the session's
    try:
        own.start()
        url = own.fresh_url()
        server = Server(url, 0, -1, (), tmp_path / "log")
        server.start()
        try:
            [span] = _tool_spans(1)
            own.stop("fast")
            status, headers, body = server.post_otlp(otlp_body([span]))
            assert (status, headers.get("retry-after")) == (503, "5"), body
            status, _, body = server.request("GET", "/api/traces")
            assert status == 503
            assert "retry" in json.loads(body)["error"]
            own.start()
            # The pool reconnects: the exporter's retry goes through.
            wait_for(lambda: server.post_otlp(otlp_body([span]))[0] == 200, "the retry", 30)
            assert server.counts() == {"spans": 1, "traces": 1}
        finally:
            server.stop()
        assert "Traceback" not in server.log.read_text()
        own.stop("fast")
        done = subprocess.run(
            [sys.executable, "-m", "toolspan", "serve", "--db", url, "--port", "0", "--grpc-port", "-1"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        lines = done.stderr.strip().splitlines()
        assert (done.returncode, len(lines)) == (2, 1), done.stderr
        assert lines[0].startswith("toolspan serve: error: cannot use the store postgresql://"), lines
        assert "cannot connect" in lines[0]
    finally:
        own.remove()
