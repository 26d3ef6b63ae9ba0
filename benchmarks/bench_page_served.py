"""The trace page of a long run as ``toolspan serve`` serves it, in a cold headless Chromium: how soon its
rows show, when its whole document is in, and whether the tab stays responsive (issue 36: 100,000 calls).

    python benchmarks/bench_page_served.py [--calls 10000] [--rounds 3]

Each round starts a fresh ``toolspan serve``, sends it the run of ``--calls`` tool calls (the requests of
``bench_vs_jaeger``) and then, in a new browser context each (no cache):

1. ``rows_ms``: the page opened cold, as ``bench_vs_jaeger.py`` measures its figure "page of the run, rows
   visible, cold": navigation start to the first animation frame after a timeline row shows (the first
   page request after the ingest);
2. ``whole_s``: the page opened again, until the whole document has replaced the first screen;
   ``load_long_ms``: the long tasks (Chromium's PerformanceObserver ``longtask``, over 50 ms) from
   navigation until then;
3. ``scroll_long_ms``: the long tasks while the timeline is scrolled top to bottom in 40 steps and ten rows
   are selected, one frame each.

Results go to ``benchmarks/results/page_served.json``, with the load average beside each round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_server import post_all  # noqa: E402
from bench_vs_jaeger import (  # noqa: E402
    TIMEOUT_S,
    TRACE_BIG,
    ToolspanSide,
    chromium,
    page_load,
    run_requests,
    wait_whole,
)

LONG_TASKS = """(() => {
  window.__long = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__long.push(Math.round(e.duration));
  }).observe({ type: "longtask", buffered: true });
})()"""
WHOLE = "() => document.body.dataset.ready === '1' && !document.body.classList.contains('partial')"
SCROLL_AND_SELECT = """async () => {
  const list = document.getElementById("timeline");
  const frames = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const before = window.__long.length;
  for (let k = 0; k <= 40; k++) { list.scrollTop = (list.scrollHeight * k) / 40; await frames(); }
  const rows = [...document.querySelectorAll("#timeline .row")].slice(0, 10);
  for (const row of rows) { row.click(); await frames(); }
  return window.__long.slice(before);
}"""


def one_round(browser: Any, run: list[bytes], spans: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="toolspan-page-served-") as tmp:
        side = ToolspanSide(Path(tmp))
        try:
            post_all(side.otlp_port, run)
            wait_whole(side, {TRACE_BIG: spans}, time.perf_counter() + TIMEOUT_S)
            rows = page_load(browser, side, TRACE_BIG, "lookup")
            context = browser.new_context(viewport={"width": 1440, "height": 900})
            try:
                page = context.new_page()
                page.add_init_script(LONG_TASKS)
                start = time.perf_counter()
                page.goto(side.page(TRACE_BIG))
                page.wait_for_function(WHOLE, timeout=600_000)
                whole_s = time.perf_counter() - start
                load_long = page.evaluate("() => window.__long.slice()")
                scroll_long = page.evaluate(SCROLL_AND_SELECT)
            finally:
                context.close()
        finally:
            side.stop()
    return {
        "rows_ms": rows["frame_ms"],
        "whole_s": round(whole_s, 2),
        "load_long_ms": load_long,
        "scroll_long_ms": scroll_long,
        "load": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "page_served.json")
    args = parser.parse_args(argv)
    run, spans = run_requests(args.calls, TRACE_BIG)
    with chromium() as browser:
        rounds = [one_round(browser, run, spans) for _ in range(args.rounds)]
    worst = lambda key: max((x for r in rounds for x in r[key]), default=0)  # noqa: E731
    doc = {
        "calls": args.calls,
        "spans": spans,
        "rows_ms_median": statistics.median(r["rows_ms"] for r in rounds),
        "whole_s_median": statistics.median(r["whole_s"] for r in rounds),
        "longest_task_loading_ms": worst("load_long_ms"),
        "longest_task_scrolling_ms": worst("scroll_long_ms"),
        "rounds": rounds,
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(doc, indent=1) + "\n", "utf-8")
    print(
        f"{args.calls:,} calls: rows visible, cold {doc['rows_ms_median']:.0f} ms (median);"
        f" whole document in {doc['whole_s_median']:.2f} s; longest task while it loads"
        f" {doc['longest_task_loading_ms']} ms, while scrolling and selecting"
        f" {doc['longest_task_scrolling_ms']} ms;"
        f" load average {[r['load'] for r in rounds]}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
