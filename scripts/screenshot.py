"""Regenerate the README's screenshot of the demo's trace page (``docs/trace-page.png``).

Runs the offline demo agent (``examples/demo_agent.py``) into a temporary directory, opens the ``run.html``
it writes in headless Chromium (Debian's ``chromium``, driven by Playwright), shows the second turn with
its ``research`` call selected, and saves a PNG.

    .venv/bin/python scripts/screenshot.py [--out docs/trace-page.png] [--dark]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[1]
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "trace-page.png")
    parser.add_argument("--dark", action="store_true", help="dark colour scheme")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, str(REPO / "examples" / "demo_agent.py"), "--out", tmp],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        page_file = Path(tmp) / "run.html"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(
                viewport={"width": 1280, "height": 860},
                color_scheme="dark" if args.dark else "light",
            )
            page.goto(page_file.as_uri())
            page.wait_for_selector("body[data-ready='1']")
            page.select_option("#trace", "1")
            page.click("#timeline .row:has-text('research') >> nth=0")
            page.wait_for_timeout(100)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out))
            browser.close()
    print(f"{args.out} ({args.out.stat().st_size:,} bytes)")  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
