"""``toolspan serve --jaeger URL`` against the real Jaeger: a trace the server does not hold (the Collector
sent it to Jaeger only) is read from Jaeger's API v3, its views and its stream too, and a trace still
arriving while it is read reaches the stream call by call; a run shipped there is in the server's trace list
and opens from it.

The application runs in two stages (``shipping_app.py staged``): its first tool call is exported and it waits;
the server's stream of the trace, read from Jaeger, gives that call's act and observe; then the application
goes on, and the second call's act and observe follow on the same connection once Jaeger holds them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from tests.e2e.otel_stack import CONFIG_DIR, Collector, Jaeger, app_env
from tests.support.server import SseEvent, running_server, sse_stream, wait_for
from toolspan.bridge.readers import read_spans
from toolspan.bridge.views import to_trees
from toolspan.cli import main

pytestmark = [pytest.mark.e2e, pytest.mark.processes]

APP = Path(__file__).with_name("shipping_app.py")


def test_serve_reads_a_trace_still_arriving_in_jaeger_call_by_call(
    go_programs: tuple[Path, Path], jaeger: Jaeger, tmp_path: Path
) -> None:
    collector = Collector(
        go_programs[0], CONFIG_DIR / "jaeger.yaml", tmp_path, {"JAEGER_ENDPOINT": jaeger.otlp_grpc}
    )
    app = subprocess.Popen(
        [sys.executable, str(APP), "staged", str(tmp_path)],
        env=app_env(collector.endpoint("grpc"), "grpc"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        with running_server(tmp_path, "--jaeger", jaeger.url, "--heartbeat", "1") as server:
            trace_id = wait_for(
                lambda: (tmp_path / "trace_id").exists() and (tmp_path / "trace_id").read_text(), "stage 1"
            )
            jaeger.wait_for_trace(trace_id, 1)  # the first tool call; the agent has not ended
            stream = sse_stream(server, f"/api/traces/{trace_id}/stream", timeout=60)
            events: Iterator[SseEvent] = (e for e in stream if e.event in ("act", "observe"))
            try:
                first = [next(events), next(events)]
                assert [(e.event, e.json()["tool_name"], e.json()["call_id"]) for e in first] == [
                    ("act", "search", "call_stage_1"),
                    ("observe", "search", "call_stage_1"),
                ]
                assert server.counts() == {"spans": 0, "traces": 0}  # read from Jaeger, not held
                (tmp_path / "release").write_text("1")
                second = [next(events), next(events)]
                assert [(e.event, e.json()["tool_name"], e.json()["call_id"]) for e in second] == [
                    ("act", "fetch", "call_stage_2"),
                    ("observe", "fetch", "call_stage_2"),
                ]
                ids = [e.id for e in [*first, *second]]
                assert len(set(ids)) == 4  # each event once, each with its own resumable cursor
            finally:
                stream.close()
            assert app.wait(60) == 0
            jaeger.wait_for_trace(trace_id, 3)
            tree = server.get_json(f"/api/traces/{trace_id}/tree")
            from_jaeger = to_trees(read_spans(jaeger.trace_v3(trace_id))[0])
            assert json.loads(json.dumps(from_jaeger)) == [tree]
            assert server.counts() == {"spans": 0, "traces": 0}
            status, _, _ = server.request("GET", "/api/traces/0123456789abcdef0123456789abcdef/tree")
            assert status == 404  # neither held nor in Jaeger
    finally:
        app.kill()
        app.wait(10)
        collector.stop()


def test_a_run_shipped_to_jaeger_is_listed_and_opens_in_the_trace_page_of_serve_jaeger(
    go_programs: tuple[Path, Path],
    jaeger: Jaeger,
    tmp_path: Path,
    browser: Browser,
    results_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The picture of ``docs/shipping.md``: a run the Collector shipped to Jaeger, listed by ``toolspan serve
    --jaeger`` (named as ``toolspan find`` names it), opened from the list and shown in its trace page in
    headless Chromium (``.e2e/results/``)."""
    collector = Collector(
        go_programs[0], CONFIG_DIR / "jaeger.yaml", tmp_path, {"JAEGER_ENDPOINT": jaeger.otlp_grpc}
    )
    try:
        done = subprocess.run(
            [sys.executable, str(APP), "run"],
            env=app_env(collector.endpoint("grpc"), "grpc", OTEL_SERVICE_NAME="my-agent"),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        trace_id = json.loads(done.stdout.splitlines()[-1])["trace_id"]
        jaeger.wait_for_trace(trace_id, 8)
    finally:
        collector.stop()
    assert main(["find", "--jaeger", jaeger.url, "--service", "my-agent"]) == 0
    (found,) = [
        run for run in map(json.loads, capsys.readouterr().out.splitlines()) if run["trace_id"] == trace_id
    ]
    with running_server(tmp_path, "--jaeger", jaeger.url) as server:
        # The list holds the run (Jaeger's runs of the last hour), named as toolspan find names it.
        listed = server.get_json("/api/traces")
        assert "note" not in listed
        (row,) = [r for r in listed["traces"] if r["trace_id"] == trace_id]
        assert (row["name"], row["service"]) == (found["name"], "my-agent")
        assert (row["spans"], row["state"]) == (8, "FAILED")  # the divide tool failed
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        try:
            page = context.new_page()
            page.goto(f"{server.url}/traces")
            page.wait_for_selector("body[data-ready='1']")
            page.locator(f"#rows tr[data-trace='{trace_id}'] a.name").click()
            page.wait_for_url(f"**/traces/{trace_id}")
            page.wait_for_selector("body[data-ready='1']")
            labels = page.locator("#tree .row .label").all_inner_texts()
            for name in (
                "planner",
                "search",
                "research",
                "deep-dive",
                "reader",
                "fetch",
                "read_file",
                "divide",
            ):
                assert name in labels, (name, labels)
            page.locator("#tree .row", has_text="divide").first.click()
            assert page.locator("#detail .badge").inner_text() == "FAILED"
            page.locator("#tree .row", has_text="research").first.click()
            assert page.locator("#detail .badge").inner_text() == "COMPLETED"
            page.screenshot(path=str(results_dir / "jaeger-run.png"))  # copied to docs/ for the guide
        finally:
            context.close()
        assert server.counts() == {"spans": 0, "traces": 0}  # shown from Jaeger, held nowhere else
