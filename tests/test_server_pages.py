"""The trace page and the trace list served by a real ``toolspan serve``: routes, escaping, the live data,
and, in real headless Chromium, a running tool that appears as RUNNING and turns COMPLETED while watched."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from playwright.sync_api import Browser, expect
from tests._server import Server, otlp_body, running_server, sdk_env, wait_for

import toolspan
from toolspan.bridge.readers import read_spans
from toolspan.bridge.views import to_pages
from toolspan.page import page_json
from toolspan.testing import capture_spans

APP = Path(__file__).with_name("server_live_app.py")
HOSTILE = '<script>window.__pwn()</script><img src=x onerror="window.__pwn()">'


def _run() -> list[ReadableSpan]:
    @toolspan.tool
    def lookup(city: str) -> dict[str, Any]:
        return {"city": city, "temp_c": 18}

    with capture_spans() as finished:
        with toolspan.agent(HOSTILE, input="weather?"):
            lookup("Paris")
        return list(finished())


def _html(server: Server, path: str) -> tuple[int, dict[str, str], str]:
    status, headers, body = server.request("GET", path)
    return status, {k.lower(): v for k, v in headers.items()}, body.decode("utf-8")


def test_trace_list_page_escapes_everything_and_links_each_trace(tmp_path: Path) -> None:
    spans = _run()
    with running_server(tmp_path) as server:
        assert server.post_otlp(otlp_body(spans))[0] == 200
        trace_id = format(spans[0].context.trace_id, "032x")
        status, headers, text = _html(server, "/traces")
    assert status == 200
    assert headers["content-type"].startswith("text/html")
    assert "<script" not in text  # the hostile agent name is shown as text, and the page has no script
    assert "&lt;script&gt;window.__pwn()&lt;/script&gt;" in text
    assert re.search(r"Content-Security-Policy\" content=\"default-src 'none'; style-src 'sha256-", text)
    assert f'href="/traces/{trace_id}"' in text
    assert "<td>toolspan-test</td>" in text
    assert '<td class="COMPLETED">COMPLETED</td>' in text


def test_trace_page_and_its_live_data(tmp_path: Path) -> None:
    spans = _run()
    body = otlp_body(spans)
    trace_id = format(spans[0].context.trace_id, "032x")
    with running_server(tmp_path) as server:
        assert server.post_otlp(body)[0] == 200
        status, headers, page = _html(server, f"/traces/{trace_id}")
        assert _html(server, f"/api/jobs/{trace_id}/trace/page")[2] == page
        data = server.get(f"/api/traces/{trace_id}/page").decode("utf-8")
        missing = server.request("GET", "/traces/" + "ab" * 16)
    assert status == 200
    assert headers["content-type"].startswith("text/html")
    assert "connect-src 'self'" in page
    assert f"/api/traces/{trace_id}/stream" in page
    assert f"/api/traces/{trace_id}/page" in page
    assert "<script>window.__pwn()" not in page  # embedded as escaped JSON
    (expected,) = to_pages(read_spans(body)[0], live=True)
    assert data == page_json(expected)
    assert missing[0] == 404
    assert json.loads(missing[2]) == {"error": f"no trace '{'ab' * 16}'", "status": 404}


def test_a_token_is_passed_on_to_the_page_links_stream_and_data(tmp_path: Path) -> None:
    spans = _run()
    trace_id = format(spans[0].context.trace_id, "032x")
    with running_server(tmp_path, "--token", "s3cret") as server:
        server.headers["Authorization"] = "Bearer s3cret"
        assert server.post_otlp(otlp_body(spans))[0] == 200
        server.headers.clear()
        assert server.request("GET", "/traces")[0] == 401
        listing = _html(server, "/traces?access_token=s3cret")[2]
        page = _html(server, f"/traces/{trace_id}?access_token=s3cret")[2]
    assert f'href="/traces/{trace_id}?access_token=s3cret"' in listing
    assert f"/api/traces/{trace_id}/stream?access_token=s3cret" in page


def test_served_page_follows_a_running_tool_until_it_completes(tmp_path: Path, browser: Browser) -> None:
    with running_server(tmp_path) as server:
        env = {**sdk_env(server, "http/protobuf"), "TOOLSPAN_PENDING_SPANS": "true"}
        app = subprocess.Popen([sys.executable, str(APP), str(tmp_path), "finish"], env=env)
        context = browser.new_context()
        try:
            rows = wait_for(
                lambda: server.get_json("/api/traces?state=RUNNING")["traces"], "the running trace"
            )
            page = context.new_page()
            requests: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto(f"{server.url}/traces/{rows[0]['trace_id']}")
            page.wait_for_selector("body[data-ready='1']")
            page.wait_for_selector("#live.on")
            row = page.locator("#timeline .row", has_text="slow_tool")
            expect(row).to_have_count(1)
            row.click()
            expect(page.locator("#detail .badge")).to_have_text("RUNNING")
            assert not (tmp_path / "returned").exists()
            (tmp_path / "release").write_text("1")
            expect(page.locator("#detail .badge")).to_have_text("COMPLETED", timeout=20_000)
            assert app.wait(60) == 0
            assert {r.split("?")[0].removeprefix(server.url).split("/")[1] for r in requests} <= {
                "traces",
                "api",
            }
        finally:
            context.close()
            app.kill()
