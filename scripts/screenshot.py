"""Regenerate the pictures the docs show: the demo's trace page, and the pages of a live ``toolspan serve``.

    .venv/bin/python scripts/screenshot.py       # docs/trace-page.png, docs/trace-list.png, docs/inbox.png
    .venv/bin/python scripts/screenshot.py --all DIR [--prefix NAME]
                                                 # every page at laptop and phone widths, light and dark,
                                                 # into DIR (NAME-list-laptop.png, ...)

The trace page: the offline demo agent (``examples/demo_agent.py``) writes ``run.html``; its second turn is
shown with its ``research`` call selected. The server's pages: a real ``toolspan serve --token`` (with a
decider ``ops`` when this toolspan has decider tokens) on a free port, fed by the demo agent over OTLP, by a
run that waits for an approval (``toolspan.ServerApprover``, every span streamed live), a run whose tool was
cancelled and one whose tool failed. Headless Chromium (Debian's ``chromium``, driven by Playwright).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, sync_playwright

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TOKEN = "screenshot-app-token"
DECIDER = "screenshot-ops-token"
LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}

# The runs fed to the server besides the demo agent's: one waits for an approval, one was cancelled, one
# failed. (A child process: ``ServerApprover`` waits in it until the script ends.)
RUNS = textwrap.dedent(
    """
    import sys, threading, toolspan
    from toolspan.errors import ToolCancelled

    toolspan.configure(service_name="payments-agent")

    @toolspan.tool
    def transfer(amount_eur: int, to_iban: str) -> dict:
        \"\"\"Send money.\"\"\"
        return {"sent": amount_eur}

    @toolspan.tool
    def watch_deploy(service: str) -> str:
        \"\"\"Follow a deploy.\"\"\"
        raise ToolCancelled("taking too long", by="ops")

    @toolspan.tool
    def fetch_invoice(number: str) -> dict:
        \"\"\"Read an invoice.\"\"\"
        raise ConnectionError("billing API timed out after 30 s")

    def ask(call_id, name, arguments):
        return [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}]

    asked = "Pay invoice 2024-117 from ACME (1,250 EUR)."
    with toolspan.agent("payments", input=asked, conversation_id="conv-pay"):
        toolspan.run_tool_calls(ask("toolu_inv", "fetch_invoice", {"number": "2024-117"}), [fetch_invoice])
    asked = "Watch the checkout deploy until it is healthy."
    with toolspan.agent("ops", input=asked, conversation_id="conv-ops"):
        toolspan.run_tool_calls(ask("toolu_watch", "watch_deploy", {"service": "checkout"}), [watch_deploy])
    toolspan.configure().force_flush()
    approver = toolspan.ServerApprover(sys.argv[1], token=sys.argv[2])
    asked = "Refund order 8812 to the customer's account."
    with toolspan.agent("payments", input=asked, conversation_id="conv-pay"):
        toolspan.run_tool_calls(
            ask("toolu_refund", "transfer", {"amount_eur": 89, "to_iban": "DE02 1203 0000 0000 2020 51"}),
            [transfer],
            approve=approver,
            approve_timeout=600,
        )
    """
)


def _env(base: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSPAN_"))}
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=base,
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_EXPORTER_OTLP_HEADERS=f"Authorization=Bearer%20{TOKEN}",
        TOOLSPAN_PENDING_SPANS="all",
        OTEL_BSP_SCHEDULE_DELAY="100",
    )
    return env


def _has_deciders() -> bool:
    done = subprocess.run(
        [sys.executable, "-m", "toolspan", "serve", "--help"], capture_output=True, text=True, check=False
    )
    return "--decider" in done.stdout


@contextmanager
def served(tmp: Path) -> Iterator[tuple[str, str]]:
    """A fed ``toolspan serve --token``: ``(its URL, the token the pages use)``."""
    log = tmp / "server.log"
    deciders = ["--decider", f"ops={DECIDER}"] if _has_deciders() else []
    command = [sys.executable, "-m", "toolspan", "serve", "--db", str(tmp / "db"), "--port", "0"]
    command += ["--grpc-port", "-1", "--token", TOKEN, *deciders]
    with open(log, "wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=out)
    runs = None
    try:
        base = ""
        for _ in range(200):
            found = re.search(r"OTLP/HTTP (http://[^\s/]+)/v1/traces", log.read_text("utf-8", "replace"))
            if found:
                base = found.group(1)
                break
            time.sleep(0.05)
        if not base:
            raise RuntimeError(f"toolspan serve did not start: {log.read_text()}")
        env = _env(base)
        demo = [sys.executable, str(REPO / "examples" / "demo_agent.py"), "--out", str(tmp / "demo")]
        subprocess.run(demo, env=env, check=True, stdout=subprocess.DEVNULL)
        runs = subprocess.Popen([sys.executable, "-c", RUNS, base, TOKEN], env=env, cwd=tmp)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        request = urllib.request.Request(f"{base}/api/control/waiting", headers=auth)
        deadline = time.monotonic() + 30
        while b'"toolu_refund"' not in urllib.request.urlopen(request).read():
            if time.monotonic() > deadline:
                raise RuntimeError("the waiting call never reached the inbox")
            time.sleep(0.1)
        yield base, DECIDER if deciders else TOKEN
    finally:
        if runs is not None:
            runs.kill()
            runs.wait()
        server.terminate()
        server.wait(10)


def _open(page: Page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']")
    page.wait_for_timeout(700)


def _trace_of(page: Page, name: str) -> str:
    href = page.locator("td.run a", has_text=name).first.get_attribute("href")
    assert href is not None
    return href


def _shoot(page: Page, path: Path, shots: list[Path]) -> None:
    page.mouse.move(0, 0)  # no row left hovered
    page.screenshot(path=str(path))
    shots.append(path)


def server_shots(base: str, token: str, out: Path, prefix: str, every: bool) -> list[Path]:
    """The list, the inbox, the waiting run's page and the token page; ``every``: at both widths, light and
    dark; else the docs' pictures only."""
    shots: list[Path] = []
    kinds = [("laptop", LAPTOP, "light"), ("laptop-dark", LAPTOP, "dark"), ("phone", PHONE, "light")]
    kinds += [("phone-dark", PHONE, "dark")]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for name, viewport, scheme in kinds if every else kinds[:1]:
            context = browser.new_context(viewport=viewport, color_scheme=scheme)  # type: ignore[arg-type]
            page = context.new_page()

            def where(what: str, name: str = name) -> Path:
                return out / f"{prefix}-{what}-{name}.png" if every else out / f"{what}.png"

            _open(page, f"{base}/traces")
            if every:
                _shoot(page, where("token-page"), shots)
            page.fill("#token", token)  # kept in this tab: every page below reads with it
            page.click("#token-go")
            page.wait_for_selector("#rows tr")
            page.wait_for_timeout(700)
            _shoot(page, where("list" if every else "trace-list"), shots)
            waiting = _trace_of(page, "Refund order 8812")
            _open(page, f"{base}/inbox")
            page.wait_for_selector(".card")
            _shoot(page, where("inbox"), shots)
            if every:
                _open(page, base + waiting)
                page.wait_for_selector("#detail .badge")
                _shoot(page, where("trace-waiting"), shots)
                _open(page, f"{base}/traces")
                demo = _trace_of(page, "Research OpenTelemetry")
                _open(page, base + demo)
                page.click("#timeline .row:has-text('research') >> nth=0")
                page.wait_for_timeout(200)
                _shoot(page, where("trace-demo"), shots)
            context.close()
        browser.close()
    return shots


def demo_page_shot(out: Path, dark: bool) -> Path:
    """The demo's ``run.html``, its second turn with the ``research`` call selected."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, str(REPO / "examples" / "demo_agent.py"), "--out", tmp],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            scheme = "dark" if dark else "light"
            page = browser.new_page(viewport={"width": 1280, "height": 860}, color_scheme=scheme)
            page.goto((Path(tmp) / "run.html").as_uri())
            page.wait_for_selector("body[data-ready='1']")
            page.select_option("#trace", "1")
            page.click("#timeline .row:has-text('research') >> nth=0")
            page.wait_for_timeout(100)
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out))
            browser.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=Path, default=REPO / "docs", help="where the docs' pictures go")
    parser.add_argument("--dark", action="store_true", help="the demo's trace page in the dark scheme")
    parser.add_argument(
        "--all", type=Path, default=None, metavar="DIR", help="every page, both widths and schemes"
    )
    parser.add_argument("--prefix", default="toolspan", help="file name prefix with --all")
    args = parser.parse_args(argv)
    made: list[Any] = []
    with tempfile.TemporaryDirectory() as tmp, served(Path(tmp)) as (base, token):
        if args.all is not None:
            args.all.mkdir(parents=True, exist_ok=True)
            made += server_shots(base, token, args.all, args.prefix, every=True)
        else:
            made += server_shots(base, token, args.docs, args.prefix, every=False)
    if args.all is None:
        made.append(demo_page_shot(args.docs / "trace-page.png", args.dark))
    for path in made:
        print(f"{path} ({path.stat().st_size:,} bytes)")  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
