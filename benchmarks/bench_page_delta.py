"""Benchmark the live trace page's page deltas on a run of 10,000 tool calls: what a page following the run
receives per burst, before (the whole page document, re-read on each burst) and now (the page delta its page
stream sends), and what applying one costs the page.

The run is recorded by the real instrumentation (``tests/support/page_data.big_run``) and exported as an
application with ``TOOLSPAN_PENDING_SPANS=all`` exports it: each span's pending record when it starts, its
ended record when it ends. A burst is what one commit stores: one record (a tool call starting, or ending),
and a burst of 20 records. Measured:

- ``document_bytes``: the page document after the burst (``/api/traces/{id}/page``, what the page read again
  on each burst before);
- ``delta_bytes``: ``page_delta`` from the document before the burst (``event: delta`` of the page stream);
- ``delta_cpu_ms``: the server's CPU time to make the delta from the two documents (built once per version
  for every page following the trace);
- ``apply_ms``: in headless Chromium (Debian's ``chromium``), a real ``toolspan serve`` holding the run up to
  the burst, its page open: the page's ``toolspan-delta`` measure (the event parsed, the delta applied to the
  model, the model rebuilt, the rows in view drawn), median over the bursts.

Results go to ``benchmarks/results/page_delta.json`` and a Markdown table is printed.

    python benchmarks/bench_page_delta.py [--calls 10000]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.formats import otlp_proto_request  # noqa: E402
from tests.support.page_data import big_run  # noqa: E402
from tests.support.server import running_server, wait_for  # noqa: E402

from toolspan.bridge.model import Span  # noqa: E402
from toolspan.bridge.views import page_delta, to_page  # noqa: E402
from toolspan.page import page_json  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
BURSTS = 6  # one-record bursts, just before the run ends


def _records(spans: list[Span]) -> list[Span]:
    timed = [(s.start_ns, 0, dataclasses.replace(s, end_ns=None)) for s in spans]
    timed += [(s.end_ns, 1, s) for s in spans if s.end_ns is not None]
    return [record for _, _, record in sorted(timed, key=lambda t: (t[0], t[1]))]


def _body(records: list[Span]) -> bytes:
    return bytes(otlp_proto_request(records).SerializeToString())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10_000)
    args = parser.parse_args(argv)
    spans = big_run(args.calls)
    records = _records(spans)
    # The bursts: the last records before the root's end (tool calls starting and ending), then 20 at once.
    end = len(records) - 1
    cuts = [(end - BURSTS - 20 + i, 1) for i in range(BURSTS)] + [(end - 20, 20)]
    sizes: list[dict[str, Any]] = []
    for at, n in cuts:
        old, new = to_page(records[:at], live=True), to_page(records[: at + n], live=True)
        t0 = time.process_time()
        delta = page_delta(old, new)
        cpu = (time.process_time() - t0) * 1000
        sizes.append(
            {
                "records": n,
                "document_bytes": len(page_json(new).encode()),
                "delta_bytes": len(page_json(delta).encode()),
                "delta_cpu_ms": round(cpu, 1),
            }
        )
    apply_ms = _chromium(records, cuts[:BURSTS])
    one = [s for s in sizes if s["records"] == 1]
    result = {
        "calls": args.calls,
        "spans": len(spans),
        "bursts": sizes,
        "document_bytes_median": statistics.median(s["document_bytes"] for s in one),
        "delta_bytes_median": statistics.median(s["delta_bytes"] for s in one),
        "delta_bytes_max": max(s["delta_bytes"] for s in one),
        "burst_of_20_delta_bytes": sizes[-1]["delta_bytes"],
        "delta_cpu_ms_median": statistics.median(s["delta_cpu_ms"] for s in one),
        "apply_ms": apply_ms,
        "apply_ms_median": statistics.median(apply_ms) if apply_ms else None,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load": os.getloadavg(),
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    }
    out = REPO / "benchmarks" / "results" / "page_delta.json"
    out.write_text(json.dumps(result, indent=1) + "\n", "utf-8")
    print(f"| {args.calls:,} tool calls, one record per burst | median | max |")
    print("|---|---:|---:|")
    docs = [s["document_bytes"] for s in one]
    deltas = [s["delta_bytes"] for s in one]
    print(f"| before: the whole document (bytes) | {statistics.median(docs):,.0f} | {max(docs):,} |")
    print(f"| now: the delta (bytes) | {statistics.median(deltas):,.0f} | {max(deltas):,} |")
    print(f"| a burst of 20 records: the delta (bytes) | {sizes[-1]['delta_bytes']:,} | |")
    cpus = [s["delta_cpu_ms"] for s in one]
    print(f"| the server's CPU to make a delta (ms) | {statistics.median(cpus):.1f} | {max(cpus):.1f} |")
    if apply_ms:
        print(f"| the page applies a delta (ms) | {statistics.median(apply_ms):.1f} | {max(apply_ms):.1f} |")
    return 0


def _chromium(records: list[Span], cuts: list[tuple[int, int]]) -> list[float]:
    """The page's ``toolspan-delta`` measures, one per burst, against a real ``toolspan serve``."""
    from playwright.sync_api import sync_playwright

    trace_id = records[0].trace_id
    out: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, running_server(Path(tmp)) as server:
        first = cuts[0][0]
        for i in range(0, first, 2000):  # the run so far, in the SDK's batches
            assert server.post_otlp(_body(records[i : min(first, i + 2000)]))[0] == 200
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{server.url}/traces/{trace_id}", timeout=120_000)
            page.wait_for_selector("#live[data-stream='open']", state="attached", timeout=120_000)
            for n, (at, count) in enumerate(cuts, start=1):
                assert server.post_otlp(_body(records[at : at + count]))[0] == 200
                wait_for(
                    lambda n=n: page.locator("#live").get_attribute("data-deltas") == str(n),
                    "the delta applied",
                    timeout=120,
                )
            out = page.evaluate(
                "performance.getEntriesByName('toolspan-delta').map((e) => Math.round(e.duration * 10) / 10)"
            )
            browser.close()
    return out


if __name__ == "__main__":
    raise SystemExit(main())
