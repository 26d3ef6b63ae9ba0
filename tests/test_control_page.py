"""The control channel on the trace page, in real headless Chromium against a real ``toolspan serve``: a
waiting call decided by clicking with a decider token (the page shows the decider's name from
``/api/whoami``; an edit that is not a JSON object refused in the page, nothing sent), a running call
cancelled by clicking after a decider token was pasted (the application's token gets no buttons), and no
buttons on a server without deciders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, expect
from tests._server import running_server, wait_for
from tests.test_control_live import (
    AUTH,
    DECIDER_ARGS,
    DECIDERS,
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
    with running_server(tmp_path, "--token", TOKEN, *DECIDER_ARGS) as server:
        server.headers = dict(AUTH)
        app = _app(server, tmp_path, "gate", "run")
        context = None
        try:
            entry = wait_for(lambda: _waiting(server, "toolu_del"), "the call in the inbox")
            # A decider opens the page with their own token: it reads, and it decides.
            context, page = _open(
                browser,
                f"{server.url}/traces/{entry['trace_id']}?access_token={DECIDERS['pat']}",
                entry["execution_id"],
            )
            expect(page.locator("#detail .badge")).to_have_text("AWAITING_APPROVAL")
            expect(page.locator("#control-by")).to_have_text("deciding as pat")
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
            assert _waiting(server, "toolu_del")["decision"] is None
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
    with running_server(tmp_path, "--token", TOKEN, *DECIDER_ARGS) as server:
        server.headers = dict(AUTH)
        app = _app(server, tmp_path, "sync", "run")
        context = None
        try:
            entry = wait_for(lambda: _waiting(server, "toolu_sync"), "the call in the inbox")
            # The page opened with the application's token (its link from the application's side): it reads,
            # and never decides, so the page says so, shows no button, and takes a decider token pasted once.
            page_url = f"{server.url}/traces/{entry['trace_id']}?access_token={TOKEN}"
            status, _, _ = server.request(
                "GET", "/traces/" + entry["trace_id"], headers={"Authorization": ""}
            )
            assert status == 401  # reads need the token on this server
            context = browser.new_context()
            page = context.new_page()
            page.goto(page_url)
            page.wait_for_selector("body[data-ready='1']")
            page.evaluate("(id) => window.toolspanPage.goTo(id)", entry["execution_id"])
            expect(page.locator("#control")).to_contain_text("this token may not decide")
            assert page.locator("#control-allow").count() == 0
            page.fill("#control-token", DECIDERS["ops"])
            page.click("#control-token-save")
            expect(page.locator("#control-by")).to_have_text("deciding as ops")
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
    assert span.attributes[semconv.TOOLSPAN_TOOL_CANCELLED_BY] == "ops"


def test_without_a_decider_the_page_shows_no_buttons(tmp_path: Path, browser: Browser) -> None:
    with running_server(tmp_path) as server:
        app = _app(server, tmp_path, "gate", "run")
        context = None
        try:
            entry = wait_for(lambda: _waiting(server, "toolu_del"), "the call in the inbox")
            context, page = _open(browser, f"{server.url}/traces/{entry['trace_id']}", entry["execution_id"])
            expect(page.locator("#detail .badge")).to_have_text("AWAITING_APPROVAL")
            assert page.locator("#control, #control-allow, #control-token").count() == 0
            doc = {
                "execution_id": entry["execution_id"],
                "decision": "deny",
                "shown": entry["arguments_sha256"],
            }
            status, _body = _post(server, "/api/control/decisions", doc)
            assert status == 403
        finally:
            if context is not None:
                context.close()
            app.kill()
