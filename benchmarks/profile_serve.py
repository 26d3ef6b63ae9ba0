"""Where ``toolspan serve``'s time goes on ``bench_vs_jaeger.py``'s workload: the ingest path from socket to
commit, the read path of the 1k-span trace's ``/tree``, and the trace page's first frame.

    python benchmarks/profile_serve.py [--spans 41472] [--calls 10000] [--output FILE]

1. **Ingest, by phase** (CPU time of this process, one thread): the server's own functions called one after
   the other on the same requests as ``bench_vs_jaeger.py``, as ``POST /v1/traces`` calls them: in the parse
   worker the rows (``rows_of_body``: the protobuf parse, each span's bytes and shape, split by
   ``cProfile``) and their preparation for the store (``prepare``), their trip to the server process
   (``marshal``), then ``store.ingest_prepared`` on a fresh SQLite file, split into its SQL statements, its
   commits and the Python around them. Next to them, in the same run: the real ``toolspan serve`` (its
   process and parse worker, ``/proc``) and a bare Starlette + uvicorn endpoint that only parses the
   protobuf (the web stack's floor); what neither accounts for is the hand-offs (event loop, thread pool,
   worker).
2. **Read path of ``/api/traces/{id}/tree``** of the 1k-span trace, by phase: the SQL read, decoding the
   stored spans, building the tree, encoding the JSON; against the real server's answer time.
3. **The trace page's first frame** in Chromium (the run of ``--calls`` tool calls): the navigation and
   resource timings of the HTML and ``/api/traces/{id}/page``, the page's own marks, the server's time to make
   the page data, and a CPU profile of the page (Chrome DevTools Protocol ``Profiler``) by function.
4. **First reads, 1,000 and 10,000 spans**: ``/tree`` and ``/otlp`` of a 1,000-span and a 10,000-span trace,
   each read once from a fresh real server (3 rounds): whether the first read grows in proportion to the
   spans.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import marshal
import os
import platform
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_server import _BASELINE, cpu_s, post_all, wait_http  # noqa: E402
from bench_vs_jaeger import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    TRACE_1K,
    TRACE_BIG,
    agent_requests,
    cpu_model,
    http_get,
    otlp_span_count,
    run_of_spans,
    run_requests,
)
from tests.support.server import Server, free_port  # noqa: E402

from toolspan.bridge.internal import Ctx  # noqa: E402
from toolspan.bridge.internal import parse_trace_request as parse_request  # noqa: E402
from toolspan.bridge.readers import ReadReport  # noqa: E402
from toolspan.bridge.views import to_pages  # noqa: E402
from toolspan.bridge.views.registry import VIEWS  # noqa: E402
from toolspan.page import page_json  # noqa: E402
from toolspan.server._http.render import document_bytes  # noqa: E402
from toolspan.server._ingest.otlp import split_valid  # noqa: E402
from toolspan.server._ingest.protobuf import rows_of_body, rows_of_request  # noqa: E402
from toolspan.server._rows.codec import decode  # noqa: E402
from toolspan.server._store import sql  # noqa: E402
from toolspan.server._store.engines import open_store  # noqa: E402
from toolspan.server._store.writes import Prepared, prepare  # noqa: E402

CPU = time.process_time
TRACE_10K = "e" * 28 + "0003"


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = CPU()
    value = fn()
    return value, CPU() - start


def top(profile: pstats.Stats, n: int) -> list[dict[str, Any]]:
    rows = []
    for (path, line, name), (_, calls, tottime, cumtime, _) in profile.stats.items():  # type: ignore[attr-defined]
        where = name if path == "~" else f"{Path(path).name}:{line} {name}"
        rows.append({"function": where, "calls": calls, "tottime_s": tottime, "cumtime_s": cumtime})
    rows.sort(key=lambda r: -r["tottime_s"])
    return rows[:n]


# --- 1. ingest -------------------------------------------------------------------------------------------


class TimedConnection:
    """The store's ``sqlite3`` connection, each statement's CPU and wall time added up by its first words
    (``COMMIT``, ``INSERT INTO spans`` ...)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cpu: dict[str, float] = defaultdict(float)
        self.wall: dict[str, float] = defaultdict(float)

    def execute(self, statement: str, params: Any = ()) -> Any:
        return self._timed("execute", statement, params)

    def _timed(self, method: str, statement: str, params: Any) -> Any:
        words = statement.split()
        kind = " ".join(words[:3] if words[0].upper() in ("INSERT", "UPDATE", "DELETE") else words[:1])
        cpu, wall = CPU(), time.perf_counter()
        try:
            return getattr(self.inner, method)(statement, params)
        finally:
            self.cpu[kind] += CPU() - cpu
            self.wall[kind] += time.perf_counter() - wall

    def executemany(self, statement: str, params: Any) -> Any:
        return self._timed("executemany", statement, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def cumulative(profile: pstats.Stats, names: dict[str, str]) -> dict[str, float]:
    """Cumulative seconds of the functions ``names`` maps (``file.py:function``) to labels."""
    out: dict[str, float] = defaultdict(float)
    for (path, _, name), (_, _, tottime, cumtime, _) in profile.stats.items():  # type: ignore[attr-defined]
        label = names.get(f"{Path(path).name}:{name}") or names.get(name)
        if label is not None:
            out[label] += tottime if path == "~" else cumtime
    return out


# What the parse worker's ``rows_of_body`` calls per span, by what it does.
ROW_PARTS = {
    "<built-in method FromString>": "protobuf parse: the request (twin type) and partial spans' bytes",
    "protobuf.py:_span_bytes": "each span's bytes found in the body (_span_bytes)",
    "_otlp_proto.py:span_of": "partial span: ids, times, the index keys' attributes converted (span_of)",
    "spans.py:row_of": "index columns from the facts: tool, state, error, conversation (row_of)",
    "protobuf.py:_mapped_shape": "the span's shape: its index keys' values (_mapped_shape)",
}


def ingest_phases(bodies: list[bytes], work: Path) -> dict[str, Any]:
    spans = 0
    phases: dict[str, float] = defaultdict(float)
    store = open_store(str(work / "phases.db"))
    timed_db = TimedConnection(store._db.raw)  # type: ignore[attr-defined]
    store._db.raw = timed_db  # type: ignore[attr-defined]
    rows_profile, store_profile = cProfile.Profile(), cProfile.Profile()
    try:
        for body in bodies:
            ctx = Ctx("request body", False, ReadReport())
            rows, t = timed(lambda: rows_of_body(body, ctx))  # noqa: B023
            phases["rows"] += t
            prepared, t = timed(lambda: prepare(*split_valid(rows)))  # noqa: B023
            phases["worker: merged, events and summaries folded, parameters (prepare)"] += t
            # As the parse worker hands them over (``parsers``): marshal bytes.
            sent, t = timed(lambda: marshal.dumps(tuple(prepared)))  # noqa: B023
            phases["worker: the prepared rows marshalled"] += t
            prepared, t = timed(lambda: Prepared._make(marshal.loads(sent)))  # noqa: B023
            phases["server: the prepared rows read back (marshal)"] += t
            _, t = timed(lambda: store.ingest_prepared(prepared))  # noqa: B023
            phases["store"] += t
            spans += prepared.accepted
        # Profiled apart (cProfile slows what it watches): the shares within each phase.
        with tempfile.TemporaryDirectory() as again:
            other = open_store(str(Path(again) / "profiled.db"))
            try:
                for body in bodies:
                    ctx = Ctx("request body", False, ReadReport())
                    rows_profile.enable()
                    rows = rows_of_body(body, ctx)
                    rows_profile.disable()
                    prepared = prepare(*split_valid(rows))
                    store_profile.enable()
                    other.ingest_prepared(prepared)
                    store_profile.disable()
            finally:
                other.close()
    finally:
        store._db.raw = timed_db.inner  # type: ignore[attr-defined]
        store.close()
    per_span = {k: v / spans * 1e6 for k, v in phases.items()}
    rows_stats = pstats.Stats(rows_profile)
    rows_total = cumulative(rows_stats, {"protobuf.py:rows_of_body": "all"})["all"]
    parts = cumulative(rows_stats, ROW_PARTS)
    rows_us = per_span.pop("rows")
    for label, seconds in parts.items():
        per_span[f"worker rows: {label}"] = rows_us * seconds / rows_total
    per_span["worker rows: the loop around them"] = rows_us * (1 - sum(parts.values()) / rows_total)
    store_us = per_span.pop("store")
    sql_us = {k: v / spans * 1e6 for k, v in timed_db.cpu.items()}
    for kind, us in sorted(sql_us.items(), key=lambda kv: -kv[1]):
        per_span[f"SQLite: {kind}"] = us
    per_span["store: Python around the statements"] = store_us - sum(sql_us.values())
    return {
        "spans": spans,
        "us_per_span": {k: round(v, 2) for k, v in per_span.items()},
        "sql_wall_us_per_span": {k: round(v / spans * 1e6, 2) for k, v in timed_db.wall.items()},
        "rows_top": top(rows_stats, 15),
        "store_top": top(pstats.Stats(store_profile), 15),
    }


def server_cpu(bodies: list[bytes], spans: int, work: Path) -> dict[str, float]:
    """CPU per span of the real ``toolspan serve`` (process and parse worker) and of the bare parse-only
    endpoint, the same requests over two keep-alive connections."""
    server = Server(work / "server.db", 0, 0, (), work / "server.log")
    server.start()
    assert server.proc is not None
    try:
        cpu0 = cpu_s(server.proc.pid)
        post_all(server.port, bodies)
        serve = cpu_s(server.proc.pid) - cpu0
    finally:
        server.stop()
    port = free_port()
    bare = subprocess.Popen([sys.executable, "-c", _BASELINE, str(port)])
    try:
        wait_http(port)
        cpu0 = cpu_s(bare.pid)
        post_all(port, bodies)
        floor = cpu_s(bare.pid) - cpu0
    finally:
        bare.terminate()
        bare.wait(10)
    return {"toolspan_serve": round(serve / spans * 1e6, 2), "bare_parse_only": round(floor / spans * 1e6, 2)}


# --- 2. the read path ------------------------------------------------------------------------------------


def build_tree(spans: list[Any]) -> Any:
    return VIEWS["tree"].build(spans)


def build_page(spans: list[Any]) -> Any:
    docs = to_pages(spans, live=True)  # as the route's ``_page_data``
    return docs[0] if len(docs) == 1 else docs


def read_phases(
    bodies: list[bytes],
    trace_id: str,
    expected: int,
    build: Callable[[list[Any]], Any],
    encode: Callable[[Any], Any],
    work: Path,
    repeats: int,
) -> dict[str, Any]:
    """A stored trace read as a route reads it, by phase (CPU ms, medians of ``repeats``)."""
    store = open_store(str(work / f"read-{trace_id}.db"))
    try:
        for body in bodies:
            ctx = Ctx("request body", False, ReadReport())
            store.ingest_rows(rows_of_request(parse_request(body, ctx), ctx))
        samples: dict[str, list[float]] = defaultdict(list)
        profiler = cProfile.Profile()
        record = store.dialect.record  # type: ignore[attr-defined]
        for i in range(repeats):
            records, t_sql = timed(
                lambda: store._read(  # type: ignore[attr-defined]
                    lambda c: c.execute(sql.SPANS_OF_TRACE, (trace_id,)).fetchall()
                )
            )
            spans, t_decode = timed(lambda: [decode(record(r[0])) for r in records])  # noqa: B023
            assert len(spans) == expected
            if i == repeats - 1:
                profiler.enable()
            doc, t_build = timed(lambda: build(spans))  # noqa: B023
            body, t_json = timed(lambda: encode(doc))  # noqa: B023
            profiler.disable()
            _, t_all = timed(lambda: store.trace_spans(trace_id))
            samples["SQL read of the rows"].append(t_sql)
            samples["decode the stored spans (protobuf to Span)"].append(t_decode)
            samples["build the view"].append(t_build)
            samples["JSON encode"].append(t_json)
            samples["store.trace_spans as the route calls it (SQL, decode, logs)"].append(t_all)
    finally:
        store.close()
    return {
        "spans": expected,
        "bytes": len(body),
        "ms": {k: round(statistics.median(v) * 1e3, 2) for k, v in samples.items()},
        "build_and_encode_top": top(pstats.Stats(profiler), 15),
    }


def first_reads(runs: dict[str, tuple[list[bytes], int]], work: Path, rounds: int) -> dict[str, Any]:
    """The first ``/tree`` and ``/otlp`` read of each trace from the real server (a fresh one each round:
    nothing kept yet), connect to last byte, in ms; each answer checked to hold every span."""
    samples: dict[str, list[float]] = defaultdict(list)
    for r in range(rounds):
        server = Server(work / f"first-{r}.db", 0, 0, (), work / f"first-{r}.log")
        server.start()
        try:
            for trace_id, (bodies, spans) in runs.items():
                post_all(server.port, bodies)
                for view in ("tree", "otlp"):
                    status, body, seconds = http_get(server.port, f"/api/traces/{trace_id}/{view}")
                    assert status == 200, (view, status)
                    if view == "otlp":
                        assert otlp_span_count(json.loads(body)) == spans, (view, spans)
                    samples[f"{spans} spans /{view}"].append(seconds * 1e3)
        finally:
            server.stop()
    return {name: round(statistics.median(v), 1) for name, v in samples.items()}


# --- 3. the page -----------------------------------------------------------------------------------------

TIMINGS = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const data = performance.getEntriesByType('resource').filter((e) => e.name.includes('/page'));
  const mark = (n) => { const m = performance.getEntriesByName(n)[0]; return m ? m.startTime : null; };
  return {
    html_response_start: nav.responseStart,
    html_response_end: nav.responseEnd,
    dom_content_loaded: nav.domContentLoadedEventEnd,
    html_bytes: nav.transferSize,
    data: data.map((e) => ({ start: e.startTime, response_start: e.responseStart, response_end: e.responseEnd,
                             bytes: e.encodedBodySize })),
    ready: mark('toolspan-ready'),
    frame: mark('toolspan-frame'),
  };
}"""


def js_profile(profile: dict[str, Any]) -> list[dict[str, Any]]:
    """Self time (ms) per function of a DevTools CPU profile."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    deltas = profile["timeDeltas"]
    self_us: dict[str, float] = defaultdict(float)
    for sample, delta in zip(profile["samples"][1:], deltas[1:], strict=False):
        frame = nodes[sample]["callFrame"]
        where = Path(frame["url"]).name if frame["url"] else ""
        self_us[f"{frame['functionName'] or '(anonymous)'} {where}".strip()] += delta
    out = [{"function": k, "ms": round(v / 1e3, 1)} for k, v in self_us.items()]
    out.sort(key=lambda r: -r["ms"])
    return out[:20]


def page_phases(run_big: list[bytes], spans: int, work: Path) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    server = Server(work / "page.db", 0, 0, (), work / "page.log")
    server.start()
    try:
        post_all(server.port, run_big)
        # Each export is answered after its commit: the trace is whole now.
        held = otlp_span_count(server.get_json(f"/api/traces/{TRACE_BIG}/otlp"))
        assert held == spans, (held, spans)
        data_ms = [http_get(server.port, f"/api/traces/{TRACE_BIG}/page")[2] * 1e3 for _ in range(5)]
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1440, "height": 900})
            page = context.new_page()
            cdp = context.new_cdp_session(page)
            cdp.send("Profiler.enable")
            cdp.send("Profiler.setSamplingInterval", {"interval": 200})
            cdp.send("Profiler.start")
            page.goto(f"{server.url}/traces/{TRACE_BIG}")
            page.wait_for_function(
                "() => performance.getEntriesByName('toolspan-frame').length > 0", timeout=120_000
            )
            profile = cdp.send("Profiler.stop")["profile"]
            timings = page.evaluate(TIMINGS)
            browser.close()
    finally:
        server.stop()
    return {
        "server_page_data_ms_median": round(statistics.median(data_ms), 1),
        "timings_ms": timings,
        "js_self_time": js_profile(profile),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--spans", type=int, default=41_472)
    parser.add_argument("--calls", type=int, default=10_000, help="tool calls of the page's run")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "profile_serve.json")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="toolspan-profile-") as tmp:
        work = Path(tmp)
        bodies, per_trace = agent_requests(args.spans, work)
        spans = sum(per_trace.values())
        run_1k, spans_1k = run_requests(run_of_spans(1_000), TRACE_1K)
        run_big, spans_big = run_requests(args.calls, TRACE_BIG)
        run_10k = run_requests(run_of_spans(10_000), TRACE_10K)
        doc: dict[str, Any] = {
            "ingest": ingest_phases(bodies, work),
            "server_cpu_us_per_span": server_cpu(bodies, spans, work),
            "read_1k_tree": read_phases(run_1k, TRACE_1K, spans_1k, build_tree, document_bytes, work, 7),
            "read_page_data": read_phases(run_big, TRACE_BIG, spans_big, build_page, page_json, work, 3),
            "page": page_phases(run_big, spans_big, work),
            "first_read_ms": first_reads({TRACE_1K: (run_1k, spans_1k), TRACE_10K: run_10k}, work, 3),
        }
        # The real /tree answer, for the read phases' total.
        server = Server(work / "tree.db", 0, 0, (), work / "tree.log")
        server.start()
        try:
            post_all(server.port, run_1k)
            doc["read_1k_tree"]["server_answer_ms_median"] = round(
                statistics.median(
                    http_get(server.port, f"/api/traces/{TRACE_1K}/tree")[2] * 1e3 for _ in range(9)
                ),
                1,
            )
        finally:
            server.stop()
    cpu = cpu_model()
    doc["machine"] = f"{cpu}, {os.cpu_count()} cores, CPython {platform.python_version()}"
    doc["load_before_after"] = [list(load_before), list(os.getloadavg())]
    doc["measured"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(doc, indent=1) + "\n", "utf-8")
    ing = doc["ingest"]["us_per_span"]
    print("ingest, CPU us per span:")
    for name, value in ing.items():
        print(f"  {name:70} {value:8.2f}")
    print(f"  {'sum of the phases':70} {sum(ing.values()):8.2f}")
    for name, value in doc["server_cpu_us_per_span"].items():
        print(f"  {name:70} {value:8.2f}")
    print("read of the 1k-span trace's /tree, ms:")
    for name, value in doc["read_1k_tree"]["ms"].items():
        print(f"  {name:70} {value:8.2f}")
    answer = doc["read_1k_tree"]["server_answer_ms_median"]
    print(f"  {'the real server, connect to last byte':70} {answer:8.2f}")
    print("first reads from the real server (a fresh one each round), ms:")
    for name, value in doc["first_read_ms"].items():
        print(f"  {name:70} {value:8.1f}")
    calls = f"{args.calls:,}"
    print(f"page data of the {calls}-call run (to_pages: /traces/{{id}}, /api/traces/{{id}}/page), ms:")
    for name, value in doc["read_page_data"]["ms"].items():
        print(f"  {name:70} {value:8.2f}")
    print(
        "page:",
        json.dumps(doc["page"]["timings_ms"]),
        "server /page data ms:",
        doc["page"]["server_page_data_ms_median"],
    )
    for row in doc["page"]["js_self_time"][:12]:
        print(f"  {row['function']:70} {row['ms']:8.1f}")
    print(f"load average before/after {doc['load_before_after']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
