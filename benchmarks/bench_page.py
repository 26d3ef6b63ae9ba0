"""Benchmark the trace page on a run of 10,000 tool calls in headless Chromium (Debian's ``chromium``).

The run is recorded by the real instrumentation (``tests/support/page_data.big_run``), rendered with
``toolspan.page.render_html(to_pages(spans))`` and opened from ``file://``. Measured, each ``--repeat``
times in a fresh browser page (medians reported):

- ``size_ratio``: the HTML file's bytes over the ``--to events`` JSON Lines of the same spans (target <= 1.5);
- ``ready_ms``: navigation start to the page's ``toolspan-ready`` mark (data parsed, rows drawn, listeners
  set), and ``frame_ms`` to the first animation frame after it: interactive (target <= 1,500 ms);
- ``collapse_ms`` / ``expand_ms``: collapse and expand the whole execution tree, layout included
  (target <= 100 ms each);
- ``select_ms``: select a step (timeline, tree and detail panel updated, layout included);
- ``dom_rows``: timeline and tree rows in the DOM after scrolling to the end (a few hundred at most).

Results go to ``benchmarks/results/page.json`` and a Markdown table is printed.

    python benchmarks/bench_page.py [--calls 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import io
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

from tests.support.page_data import big_run  # noqa: E402

from toolspan.bridge import write_json_lines  # noqa: E402
from toolspan.bridge.views import to_events, to_pages  # noqa: E402
from toolspan.page import render_html  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TIMED = """async (target) => {
  const layout = () => document.body.offsetHeight;
  const time = (f) => { const t = performance.now(); f(); layout(); return performance.now() - t; };
  const frame = performance.getEntriesByName('toolspan-frame')[0];
  const out = {
    ready_ms: performance.getEntriesByName('toolspan-ready')[0].startTime,
    frame_ms: frame ? frame.startTime : null,
    collapse_ms: time(() => window.toolspanPage.collapseAll()),
    expand_ms: time(() => window.toolspanPage.expandAll()),
    select_ms: time(() => window.toolspanPage.goTo(target)),
  };
  const t = document.getElementById('timeline');
  t.scrollTop = t.scrollHeight;
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  out.dom_rows = document.querySelectorAll('.row').length;
  return out;
}"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "page.json")
    args = parser.parse_args(argv)

    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()
    spans = big_run(args.calls)
    t = time.perf_counter()
    pages = to_pages(spans)
    html = render_html(pages)
    render_s = time.perf_counter() - t
    events = io.BytesIO()
    write_json_lines(to_events(spans), events)
    html_bytes = len(html.encode("utf-8"))
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        path = Path(tmp) / "run.html"
        path.write_text(html, "utf-8")
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for _ in range(args.repeat):
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(path.as_uri())
            page.wait_for_selector("body[data-ready='1']")
            page.wait_for_function("performance.getEntriesByName('toolspan-frame').length > 0")
            # select_ms: a step in the middle of the run (off screen: the lists scroll to it).
            middle = pages[0]["steps"][len(pages[0]["steps"]) // 2]["id"]
            runs.append(page.evaluate(TIMED, middle))
            page.close()
        browser.close()
    keys = ("ready_ms", "frame_ms", "collapse_ms", "expand_ms", "select_ms", "dom_rows")
    result = {
        "calls": args.calls,
        "spans": len(spans),
        "html_bytes": html_bytes,
        "events_bytes": len(events.getvalue()),
        "size_ratio": round(html_bytes / len(events.getvalue()), 3),
        "render_s": round(render_s, 3),
        "median": {k: round(statistics.median(r[k] for r in runs), 1) for k in keys},
        "max": {k: round(max(r[k] for r in runs), 1) for k in keys},
        "runs": runs,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"CPython {platform.python_version()}",
        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    m, x = result["median"], result["max"]
    print(f"| {args.calls:,} tool calls ({len(spans):,} spans) | median | max | target |")
    print("|---|---:|---:|---:|")
    print(f"| HTML / `--to events` size | {result['size_ratio']:.2f}x | | <= 1.5x |")
    print(f"| page ready (ms) | {m['ready_ms']:.0f} | {x['ready_ms']:.0f} | |")
    print(f"| first frame, interactive (ms) | {m['frame_ms']:.0f} | {x['frame_ms']:.0f} | <= 1,500 |")
    print(f"| collapse all (ms) | {m['collapse_ms']:.1f} | {x['collapse_ms']:.1f} | <= 100 |")
    print(f"| expand all (ms) | {m['expand_ms']:.1f} | {x['expand_ms']:.1f} | <= 100 |")
    print(f"| select a step (ms) | {m['select_ms']:.1f} | {x['select_ms']:.1f} | |")
    print(f"| rows in the DOM | {m['dom_rows']:.0f} | {x['dom_rows']:.0f} | a few hundred |")
    before, after = result["load_average_before_after"]
    print(f"\n{result['machine']}; load average before/after {before} / {after}; {result['measured']}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
