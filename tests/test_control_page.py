"""The control channel on the trace page, in real headless Chromium against a real ``toolspan serve``: a
waiting call decided by clicking (an edit that is not a JSON object refused in the page, nothing sent), a
running call cancelled by clicking, and no buttons on a server without a token."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, expect
from tests._server import running_server, wait_for
from tests.test_control_live import (
    AUTH,
    TOKEN,
    _app,
    _bodies,
    _decided,
    _finish,
    _post,
    _tool_spans,
    _waiting,
)

from toolspan import semconv


def _open(browser: Browser, url: str, execution_id: str) -> Any:
    context = browser.new_context()
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']")
    page.wait_for_selector("#live.on")
    page.evaluate("(id) => window.toolspanPage.goTo(id)", execution_id)
    return context, page


def test_a_waiting_call_is_decided_by_clicking_with_edited_arguments(
    tmp_path: Path, browser: Browser
) -> None:
    with running_server(tmp_path, "--token", TOKEN) as server:
        server.headers = dict(AUTH)
        app = _app(server, tmp_path, "gate", "run")
        context = None
        try:
            entry = wait_for(lambda: _waiting(server, "toolu_del"), "the call in the inbox")
            context, page = _open(
                browser,
                f"{server.url}/traces/{entry['trace_id']}?access_token={TOKEN}",
                entry["execution_id"],
            )
            expect(page.locator("#detail .badge")).to_have_text("AWAITING_APPROVAL")
            page.fill("#control-by", "pat")
            page.click("#control-edit")
            editor = page.locator("#control-arguments")
            assert json.loads(editor.input_value()) == {"path": "/srv/old"}
            editor.fill('["/tmp"]')
            page.click("#control-send-edit")
            expect(page.locator(".control-error")).to_have_text("the arguments must be a JSON object")
            editor.fill("{not json")
            page.click("#control-send-edit")
            expect(page.locator(".control-error")).to_contain_text("not JSON")
            # Nothing was sent: the server holds no decision.
            assert server.get_json("/api/control/decisions/toolu_del")["decision"] is None
            editor.fill('{"path": "/srv/old/logs"}')
            page.click("#control-send-edit")
            expect(page.locator("#control-result")).to_contain_text("allow edited: done (allow by pat)")
            _finish(app)
            # The result appears live: the call completes on the page.
            expect(page.locator("#detail .badge")).to_have_text("COMPLETED", timeout=20_000)
            expect(page.locator("#detail")).to_contain_text("allow by pat")
        finally:
            if context is not None:
                context.close()
            app.kill()
    (ran,) = _bodies(tmp_path, "run")
    assert ran["arguments"] == {"path": "/srv/old/logs"}
    (span,) = _tool_spans(tmp_path, "run")
    assert _decided(span)[semconv.PERMISSION_DECIDED_BY] == "pat"


def test_a_running_call_is_cancelled_by_clicking(tmp_path: Path, browser: Browser) -> None:
    with running_server(tmp_path, "--token", TOKEN) as server:
        server.headers = dict(AUTH)
        app = _app(server, tmp_path, "sync", "run")
        context = None
        try:
            entry = wait_for(lambda: _waiting(server, "toolu_sync"), "the call in the inbox")
            # The token pasted once into the page (the page's URL has none).
            page_url = f"{server.url}/traces/{entry['trace_id']}"
            status, _, _ = server.request(
                "GET", "/traces/" + entry["trace_id"], headers={"Authorization": ""}
            )
            assert status == 401  # reads need the token on this server
            context = browser.new_context(extra_http_headers=AUTH)
            page = context.new_page()
            page.goto(page_url)
            page.wait_for_selector("body[data-ready='1']")
            page.evaluate("(id) => window.toolspanPage.goTo(id)", entry["execution_id"])
            assert page.locator("#control-allow").count() == 0
            page.fill("#control-token", TOKEN)
            page.click("#control-token-save")
            page.click("#control-allow")
            expect(page.locator("#control-result")).to_contain_text("allow: done")
            wait_for(lambda: _bodies(tmp_path, "run"), "the body started")
            page.wait_for_selector("#live.on")
            expect(page.locator("#detail .badge")).to_have_text("RUNNING", timeout=20_000)
            page.click("#control-cancel")
            expect(page.locator("#control-result")).to_contain_text("cancel: done")
            _finish(app)
            expect(page.locator("#detail .badge")).to_have_text("CANCELLED", timeout=20_000)
        finally:
            if context is not None:
                context.close()
            app.kill()
    ((result,),) = json.loads((tmp_path / "run-results.json").read_text())
    assert result["content"].startswith("ToolCancelled")
    (span,) = _tool_spans(tmp_path, "run")
    assert span.attributes[semconv.TOOLSPAN_TOOL_CANCELLED_BY] == "page"


def test_without_a_token_the_page_shows_no_buttons(tmp_path: Path, browser: Browser) -> None:
    with running_server(tmp_path) as server:
        app = _app(server, tmp_path, "gate", "run")
        context = None
        try:
            entry = wait_for(lambda: _waiting(server, "toolu_del"), "the call in the inbox")
            context, page = _open(browser, f"{server.url}/traces/{entry['trace_id']}", entry["execution_id"])
            expect(page.locator("#detail .badge")).to_have_text("AWAITING_APPROVAL")
            assert page.locator("#control, #control-allow, #control-token").count() == 0
            status, _body = _post(
                server, "/api/control/decisions", {"call_id": "toolu_del", "decision": "deny", "by": "x"}
            )
            assert status == 403
        finally:
            if context is not None:
                context.close()
            app.kill()
