"""``toolspan serve`` (SQLite) and Jaeger v2 (memory storage, its real UI), side by side in one run.

    python benchmarks/bench_vs_jaeger.py [--quick] [--rounds 3] [--output benchmarks/results/vs_jaeger.json]

Both servers get the same requests, on free 127.0.0.1 ports, in interleaved rounds (the order of the two
turns each round), each round on a fresh server (``toolspan serve`` on a fresh SQLite file; Jaeger as
``backend-config/jaeger.yaml`` runs it, ``scripts/e2e-deps.sh go`` and ``ui`` build it). Per round and server:

1. **Ingest**: the agent traces of ``gen_agent_spans.py`` (41,472 spans, 3,117 traces; ``--quick``: 5,120)
   as OTLP/HTTP protobuf requests of 512 spans, posted back to back over two keep-alive connections.
   *Acknowledged* spans/s stops the clock at the last response; *stored* spans/s when the read API returns
   every span of the traces of the last two requests; then every trace is read back off the clock (a trace
   still short moves the clock to the moment it is whole) and its span count compared with what was sent.
   Server CPU per span: user + system time of the server process and its children (``/proc/<pid>/stat``)
   over the ingest. Peak RSS: ``VmHWM`` of the same processes after the ingest and at the end of the round.
2. **One 1,000-span trace as JSON**: a run recorded by the real instrumentation (``tests/support/page_data``),
   read on a new connection each time: toolspan's ``/api/traces/{id}/tree`` and ``/api/traces/{id}/otlp``
   (the raw spans), Jaeger's ``/api/v3/traces/{id}`` and ``/api/traces/{id}`` (v1); connect to last byte.
   Every answer is checked: it holds the trace's 1,000 spans. Before them, toolspan is waited for by its
   store's count of spans (``/healthz``), not by reading the trace, so the first read of each view is made
   from the stored spans, as a person's first look at a run is; the "first read" rows are those, against
   Jaeger's first v3 read (it keeps nothing: every read of it is made from its store). The renderings toolspan
   found and made during the reads are saved (``renders_during_query``: a miss per view, then hits).
3. **The trace's page, rows visible, Chromium cold**: toolspan's ``/traces/{id}`` and the Jaeger UI's
   ``/trace/{id}``, each in a new browser context (empty cache) of Debian's Chromium, for the 1,000-span
   trace and for a run of 10,000 tool calls (``--quick``: 2,000). Navigation start to the first animation
   frame after a row with text is in the DOM (``performance.now()`` in the page).

One table is printed (median, min and max over the rounds; ratio toolspan / Jaeger of the medians; the
1-minute load average during the figure's samples) and everything is saved as JSON.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import http.client
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_server import HOST, cpu_s, post_all, tree  # noqa: E402
from gen_agent_spans import generate  # noqa: E402
from google.protobuf.json_format import ParseDict  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402  (the tests' own Chromium and flags)
from tests.e2e.otel_stack import JAEGER_VERSION, Jaeger, go_binaries, jaeger_ui  # noqa: E402
from tests.support.page_data import big_run  # noqa: E402
from tests.support.server import Server  # noqa: E402

from toolspan.bridge import to_otlp_json  # noqa: E402

BATCH = 512
TRACE_1K = "e" * 28 + "0001"
TRACE_BIG = "e" * 28 + "0002"
TIMEOUT_S = 300.0

# Stamps, in the page, the first moment a row with text is in the DOM (``dom``) and the animation frame after
# it (``frame``: the rows are drawn), both from navigation start.
ROWS_SEEN = """(selector) => {
  const has = () => {
    for (const el of document.querySelectorAll(selector)) {
      if (el.textContent.trim() && el.getBoundingClientRect().height > 0) return true;
    }
    return false;
  };
  const stamp = () => {
    if (window.__rows || !document.body || !has()) return false;
    window.__rows = { dom: performance.now() };
    requestAnimationFrame(() => { window.__rows.frame = performance.now(); });
    return true;
  };
  const watch = new MutationObserver(() => { if (stamp()) watch.disconnect(); });
  watch.observe(document, { childList: true, subtree: true, characterData: true, attributes: true });
}"""


# --- the requests ----------------------------------------------------------------------------------------


def protobuf(doc: dict[str, Any]) -> bytes:
    """An OTLP JSON ``ExportTraceServiceRequest`` (hex ids) as the protobuf body an SDK sends."""
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                for item in (sp, *sp.get("links", ())):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if item.get(key):
                            item[key] = base64.b64encode(bytes.fromhex(item[key])).decode()
    return bytes(ParseDict(doc, ExportTraceServiceRequest()).SerializeToString())


def agent_requests(spans: int, work: Path) -> tuple[list[bytes], Counter[str]]:
    """``gen_agent_spans.py``'s traces in requests of ``BATCH`` spans, and the spans of each trace."""
    path = work / "agent.jsonl"
    generate(path, spans, batch=BATCH)
    bodies: list[bytes] = []
    per_trace: Counter[str] = Counter()
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            for rs in doc["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    per_trace.update(sp["traceId"] for sp in ss["spans"])
            bodies.append(protobuf(doc))
    return bodies, per_trace


def last_traces(bodies: list[bytes], connections: int = 2) -> set[str]:
    """The traces of the last request of each connection (``post_all`` deals the requests round robin)."""
    found: set[str] = set()
    for body in bodies[-connections:]:
        request = ExportTraceServiceRequest.FromString(body)
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                found.update(sp.trace_id.hex() for sp in ss.spans)
    return found


def run_requests(calls: int, trace_id: str) -> tuple[list[bytes], int]:
    """A run of ``calls`` tool calls recorded by the real instrumentation, as trace ``trace_id``, in requests
    of ``BATCH`` spans; and its span count."""
    spans = big_run(calls)
    bodies = []
    for i in range(0, len(spans), BATCH):
        doc = to_otlp_json(spans[i : i + BATCH])
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    sp["traceId"] = trace_id
        bodies.append(protobuf(doc))
    return bodies, len(spans)


def run_of_spans(target: int) -> int:
    """The number of tool calls whose ``big_run`` holds exactly ``target`` spans (one agent span, the tool
    calls, a plan span for every hundredth)."""
    calls = target - 1 - target // 100
    while len(big_run(calls)) < target:
        calls += 1
    return calls


# --- the two servers -------------------------------------------------------------------------------------


def http_get(port: int, path: str) -> tuple[int, bytes, float]:
    """``(status, body, seconds)`` of one GET on a new connection, connect to last byte."""
    start = time.perf_counter()
    conn = http.client.HTTPConnection(HOST, port, timeout=60)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    return response.status, body, time.perf_counter() - start


def otlp_span_count(doc: dict[str, Any]) -> int:
    return sum(len(ss.get("spans") or []) for rs in doc.get("resourceSpans") or [] for ss in rs["scopeSpans"])


def tree_span_count(node: dict[str, Any]) -> int:
    """Spans in an execution tree (the root is the job, no span)."""
    count, stack = 0, list(node["children"])
    while stack:
        child = stack.pop()
        count += 1
        stack.extend(child.get("children") or ())
    return count


class Side:
    """One server under test: started fresh each round, read through its own API."""

    name = ""
    pid = 0
    otlp_port = 0
    read_port = 0
    row_selector = ""
    # name: (path, the spans a JSON answer holds)
    queries: ClassVar[dict[str, tuple[str, Callable[[Any], int]]]] = {}
    _conn: http.client.HTTPConnection | None = None

    def read(self, path: str) -> tuple[int, bytes]:
        """``(status, body)`` of a GET on the read port, over one keep-alive connection."""
        for attempt in range(2):
            if self._conn is None:
                self._conn = http.client.HTTPConnection(HOST, self.read_port, timeout=60)
            try:
                self._conn.request("GET", path)
                response = self._conn.getresponse()
                return response.status, response.read()
            except (OSError, http.client.HTTPException):
                self._conn.close()
                self._conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def stop(self) -> None:
        raise NotImplementedError

    def spans_of(self, trace_id: str) -> int:
        raise NotImplementedError

    def wait_unread(self, expected: dict[str, int], total: int, deadline: float) -> None:
        """Wait until ``expected`` (trace id: spans) is stored, ``total`` spans in all, without reading
        any view of those traces, so the reads timed next are their first."""
        wait_whole(self, expected, deadline)

    def renders(self) -> dict[str, int] | None:
        """The server's counts of renderings kept, found and made (``None``: it keeps none)."""
        return None

    def page(self, trace_id: str) -> str:
        raise NotImplementedError


class ToolspanSide(Side):
    name = "toolspan serve (SQLite)"
    row_selector = "#timeline .row"
    queries: ClassVar[dict[str, tuple[str, Callable[[Any], int]]]] = {
        "tree": ("/api/traces/{id}/tree", lambda doc: tree_span_count(doc["execution_tree"])),
        "raw": ("/api/traces/{id}/otlp", otlp_span_count),
    }

    def __init__(self, work: Path) -> None:
        self.server = Server(work / "toolspan.db", 0, 0, (), work / "toolspan.log")
        self.server.start()
        assert self.server.proc is not None
        self.pid = self.server.proc.pid
        self.otlp_port = self.read_port = self.server.port

    def stop(self) -> None:
        self.server.stop()

    def spans_of(self, trace_id: str) -> int:
        status, body = self.read(f"/api/traces/{trace_id}/otlp")
        return otlp_span_count(json.loads(body)) if status == 200 else 0

    def _health(self) -> dict[str, Any]:
        status, body = self.read("/healthz")
        if status != 200:
            raise RuntimeError(f"{self.name} /healthz: {status}")
        return dict(json.loads(body))

    def wait_unread(self, expected: dict[str, int], total: int, deadline: float) -> None:
        # The store's count of spans: reading a trace's /otlp would keep its rendering, and the first timed
        # read of it would be no first read. (Each timed read checks the trace's spans.)
        while int(self._health()["spans"]) < total:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"{self.name}: {total} spans not stored after {TIMEOUT_S} s")
            time.sleep(0.01)

    def renders(self) -> dict[str, int] | None:
        return {k: int(v) for k, v in self._health()["renders"].items()}

    def page(self, trace_id: str) -> str:
        return f"http://{HOST}:{self.read_port}/traces/{trace_id}"


def v1_span_count(doc: dict[str, Any]) -> int:
    return sum(len(t.get("spans") or []) for t in doc.get("data") or [])


class JaegerSide(Side):
    name = f"Jaeger {JAEGER_VERSION} (memory)"
    row_selector = ".span-row"
    queries: ClassVar[dict[str, tuple[str, Callable[[Any], int]]]] = {
        "v3": ("/api/v3/traces/{id}", lambda doc: otlp_span_count(doc["result"])),
        "v1": ("/api/traces/{id}", v1_span_count),
    }

    def __init__(self, work: Path, binary: Path, ui: Path) -> None:
        self.jaeger = Jaeger(binary, work, ui=ui)
        self.pid = self.jaeger.proc.pid
        self.otlp_port = self.jaeger.otlp_http_port
        self.read_port = self.jaeger.query_port

    def stop(self) -> None:
        self.jaeger.stop()

    def spans_of(self, trace_id: str) -> int:
        status, body = self.read(f"/api/v3/traces/{trace_id}")
        return otlp_span_count(json.loads(body)["result"]) if status == 200 else 0

    def page(self, trace_id: str) -> str:
        return f"http://{HOST}:{self.read_port}/trace/{trace_id}"


def hwm_kib(pid: int) -> int:
    """``VmHWM`` (peak resident set) of ``pid`` and its live children, summed."""
    total = 0
    for p in tree(pid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
    return total


def load() -> float:
    return os.getloadavg()[0]


# --- one round on one server -----------------------------------------------------------------------------


def wait_whole(side: Side, expected: dict[str, int], deadline: float) -> None:
    for trace_id, count in expected.items():
        while side.spans_of(trace_id) < count:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"{side.name}: trace {trace_id} not whole after {TIMEOUT_S} s")
            time.sleep(0.01)


def ingest(side: Side, bodies: list[bytes], per_trace: Counter[str]) -> dict[str, Any]:
    loads = [load()]
    sentinels = {t: per_trace[t] for t in last_traces(bodies)}
    cpu0 = cpu_s(side.pid)
    start = time.perf_counter()
    acked = post_all(side.otlp_port, bodies)
    deadline = start + TIMEOUT_S
    wait_whole(side, sentinels, deadline)
    stored = time.perf_counter() - start
    cpu = cpu_s(side.pid) - cpu0
    loads.append(load())
    # Every trace read back, off the clock; one still short moves the clock to when it is whole.
    read_back = {t: side.spans_of(t) for t in per_trace}
    short = {t: n for t, n in per_trace.items() if read_back[t] < n}
    if short:
        wait_whole(side, short, deadline)
        stored = time.perf_counter() - start
        read_back.update((t, side.spans_of(t)) for t in short)
    if read_back != dict(per_trace):
        wrong = [(t, read_back[t], n) for t, n in per_trace.items() if read_back[t] != n][:3]
        raise RuntimeError(f"{side.name}: spans read back differ from those sent: {wrong}")
    # The rates count the spans read back (equal to those sent: checked above).
    spans = sum(read_back.values())
    return {
        "spans": sum(per_trace.values()),
        "traces": len(per_trace),
        "requests": len(bodies),
        "spans_read_back": sum(read_back.values()),
        "traces_read_back": len(read_back),
        "late_traces": len(short),
        "acknowledged_s": round(acked, 6),
        "stored_s": round(stored, 6),
        "acknowledged_spans_per_s": round(spans / acked),
        "stored_spans_per_s": round(spans / stored),
        "cpu_s": round(cpu, 3),
        "cpu_us_per_span": round(cpu / spans * 1e6, 2),
        "peak_rss_mib": round(hwm_kib(side.pid) / 1024, 1),
        "load": loads,
    }


def query(side: Side, trace_id: str, spans: int, repeats: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (template, count) in side.queries.items():
        path = template.format(id=trace_id)
        times, loads = [], []
        for _ in range(repeats):
            status, body, seconds = http_get(side.read_port, path)
            if status != 200 or count(json.loads(body)) != spans:
                raise RuntimeError(f"{side.name} {path}: {status}, not the {spans} spans sent")
            times.append(seconds * 1e3)
            loads.append(load())
        out[name] = {"path": template, "ms": [round(t, 2) for t in times], "bytes": len(body), "load": loads}
    return out


def page_load(browser: Any, side: Side, trace_id: str, name: str) -> dict[str, Any]:
    """One cold load (a new context: no cache) of the trace's page, until its rows are drawn."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        page = context.new_page()
        page.add_init_script(f"({ROWS_SEEN})({json.dumps(side.row_selector)})")
        page.goto(side.page(trace_id))
        page.wait_for_function("() => window.__rows && window.__rows.frame !== undefined", timeout=120_000)
        rows = page.evaluate("window.__rows")
        shown = page.locator(side.row_selector).filter(has_text=name).count()
        if shown == 0:
            raise RuntimeError(f"{side.name}: the page of {trace_id} shows no row of {name!r}")
        return {"dom_ms": round(rows["dom"], 1), "frame_ms": round(rows["frame"], 1), "load": load()}
    finally:
        context.close()


def one_round(
    side_of: Callable[[Path], Side], data: dict[str, Any], browser: Any, repeats: int
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="toolspan-vs-jaeger-") as tmp:
        side = side_of(Path(tmp))
        try:
            result: dict[str, Any] = {"ingest": ingest(side, data["bodies"], data["per_trace"])}
            total = result["ingest"]["spans_read_back"]
            for bodies, trace_id, spans in (data["run_1k"], data["run_big"]):
                post_all(side.otlp_port, bodies)
                total += spans
                side.wait_unread({trace_id: spans}, total, time.perf_counter() + TIMEOUT_S)
            before = side.renders()
            result["query_1k"] = query(side, TRACE_1K, data["run_1k"][2], repeats)
            after = side.renders()
            if before is not None and after is not None:
                # Each view's first read made its rendering (a miss), the reads after it found it (hits).
                result["renders_during_query"] = {k: after[k] - before[k] for k in ("hits", "misses")}
            result["page_1k"] = page_load(browser, side, TRACE_1K, "lookup")
            result["page_big"] = page_load(browser, side, TRACE_BIG, "lookup")
            result["peak_rss_end_mib"] = round(hwm_kib(side.pid) / 1024, 1)
        finally:
            side.stop()
    return result


# --- the table -------------------------------------------------------------------------------------------


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


FIGURES: list[tuple[str, str, Callable[[dict[str, Any]], float], Callable[[dict[str, Any]], list[float]]]] = [
    ("stored spans/s", "", lambda r: r["ingest"]["stored_spans_per_s"], lambda r: r["ingest"]["load"]),
    (
        "acknowledged spans/s",
        "",
        lambda r: r["ingest"]["acknowledged_spans_per_s"],
        lambda r: r["ingest"]["load"],
    ),
    ("server CPU per span (us)", "", lambda r: r["ingest"]["cpu_us_per_span"], lambda r: r["ingest"]["load"]),
    (
        "peak RSS after the ingest (MiB)",
        "",
        lambda r: r["ingest"]["peak_rss_mib"],
        lambda r: r["ingest"]["load"],
    ),
    ("peak RSS, end of round (MiB)", "", lambda r: r["peak_rss_end_mib"], lambda r: [r["page_big"]["load"]]),
]


def figures(results: dict[str, list[dict[str, Any]]], big_calls: int) -> list[dict[str, Any]]:
    """The table's rows: each figure's median, min and max per server, the ratio toolspan / Jaeger of the
    medians, and the load average during its samples."""
    ts, jg = results["toolspan"], results["jaeger"]
    rows: list[dict[str, Any]] = []

    def row(
        name: str, t_values: list[float], j_values: list[float], loads: list[float], note: str = ""
    ) -> None:
        t, j = spread(t_values), spread(j_values)
        rows.append(
            {
                "figure": name,
                "toolspan": t,
                "jaeger": j,
                "ratio": round(t["median"] / j["median"], 2),
                "load": round(statistics.median(loads), 2),
                "note": note,
            }
        )

    for name, note, value, loads in FIGURES:
        row(
            name,
            [value(r) for r in ts],
            [value(r) for r in jg],
            [x for r in ts + jg for x in loads(r)],
            note,
        )
    query_pairs = [("tree", "v3"), ("raw", "v1")]
    for t_name, j_name in query_pairs:
        t_path, j_path = ts[0]["query_1k"][t_name]["path"], jg[0]["query_1k"][j_name]["path"]
        row(
            f"1k-span trace as JSON (ms): `{t_path}` vs `{j_path}`",
            [x for r in ts for x in r["query_1k"][t_name]["ms"]],
            [x for r in jg for x in r["query_1k"][j_name]["ms"]],
            [x for r in ts for x in r["query_1k"][t_name]["load"]]
            + [x for r in jg for x in r["query_1k"][j_name]["load"]],
        )
    # The first read after the ingest, of each of toolspan's views: neither read before, so made from the
    # stored spans (no rendering kept yet); the reads after it are served from the one kept. Both against
    # Jaeger's API v3, the goal's peer (Jaeger keeps nothing: each of its reads is a first).
    for t_name in ("tree", "raw"):
        t_path, j_path = ts[0]["query_1k"][t_name]["path"], jg[0]["query_1k"]["v3"]["path"]
        row(
            f"1k-span trace as JSON, first read (ms): `{t_path}` vs `{j_path}`",
            [r["query_1k"][t_name]["ms"][0] for r in ts],
            [r["query_1k"]["v3"]["ms"][0] for r in jg],
            [r["query_1k"][t_name]["load"][0] for r in ts] + [r["query_1k"]["v3"]["load"][0] for r in jg],
        )
    for key, label in (("page_1k", "1k-span trace"), ("page_big", f"{big_calls:,}-tool-call run")):
        row(
            f"page of the {label}, rows visible, cold (ms)",
            [r[key]["frame_ms"] for r in ts],
            [r[key]["frame_ms"] for r in jg],
            [r[key]["load"] for r in ts + jg],
        )
    return rows


def fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.1f}"


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| figure | toolspan serve: median (min to max) | Jaeger: median (min to max) | toolspan / Jaeger"
        " | load |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        t, j = r["toolspan"], r["jaeger"]
        lines.append(
            f"| {r['figure']} | {fmt(t['median'])} ({fmt(t['min'])} to {fmt(t['max'])}) "
            f"| {fmt(j['median'])} ({fmt(j['min'])} to {fmt(j['max'])}) "
            f"| {r['ratio']:.2f}x | {r['load']:.1f} |"
        )
    return "\n".join(lines)


# --- main ------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` knows."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def run_facts(load_before: tuple[float, float, float]) -> dict[str, Any]:
    """What a result file says of the run: the machine, the commit, when, and the load before and after."""
    return {
        "machine": {
            "cpu": cpu_model(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "commit": git_commit(),
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_before_after": [list(load_before), list(os.getloadavg())],
    }


def save(doc: dict[str, Any], output: Path) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(doc, indent=1) + "\n", "utf-8")


def git_commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
    )
    return done.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--quick", action="store_true", help="1 round of 5,120 spans, a 2,000-call page: < 1 min"
    )
    parser.add_argument("--rounds", type=int, default=None, help="rounds per server (3; --quick: 1)")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "vs_jaeger.json")
    args = parser.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 3)
    spans, big_calls, repeats = (5_120, 2_000, 5) if args.quick else (41_472, 10_000, 20)

    jaeger_bin, ui = go_binaries()[1], jaeger_ui()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="toolspan-vs-jaeger-") as tmp:
        bodies, per_trace = agent_requests(spans, Path(tmp))
    run_1k, spans_1k = run_requests(run_of_spans(1_000), TRACE_1K)
    run_big, spans_big = run_requests(big_calls, TRACE_BIG)
    data = {
        "bodies": bodies,
        "per_trace": per_trace,
        "run_1k": (run_1k, TRACE_1K, spans_1k),
        "run_big": (run_big, TRACE_BIG, spans_big),
    }
    sides: dict[str, Callable[[Path], Side]] = {
        "toolspan": ToolspanSide,
        "jaeger": lambda work: JaegerSide(work, jaeger_bin, ui),
    }
    results: dict[str, list[dict[str, Any]]] = {"toolspan": [], "jaeger": []}
    with chromium() as browser:
        for n in range(rounds):
            order = ["toolspan", "jaeger"] if n % 2 == 0 else ["jaeger", "toolspan"]
            for key in order:
                results[key].append(one_round(sides[key], data, browser, repeats))
    rows = figures(results, big_calls)
    doc = {
        "benchmark": "vs_jaeger",
        "quick": args.quick,
        "rounds": rounds,
        "ingest": {
            "spans": spans,
            "traces": len(per_trace),
            "requests": len(bodies),
            "batch": BATCH,
            "connections": 2,
        },
        "trace_1k_spans": spans_1k,
        "big_run": {"calls": big_calls, "spans": spans_big},
        "query_repeats": repeats,
        "servers": {"toolspan": ToolspanSide.name, "jaeger": JaegerSide.name},
        **run_facts(load_before),
        "figures": rows,
        "rounds_results": results,
    }
    save(doc, args.output)
    print(table(rows))
    before, after = ([round(x, 2) for x in la] for la in doc["load_before_after"])
    print(
        f"\n{rounds} round(s) per server, interleaved; {spans:,} spans ({len(per_trace):,} traces) in"
        f" {len(bodies)} requests of {BATCH} over 2 connections; the 1k-span trace read {repeats} times a"
        f" round; ratio = toolspan / Jaeger.\n{doc['machine']['cpu']}, {os.cpu_count()} cores, CPython"
        f" {platform.python_version()}; load average before/after {before} / {after}; {doc['measured']},"
        f" commit {doc['commit']}."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
