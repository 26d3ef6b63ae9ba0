"""The control channel on the trace page and in the inbox, in real headless Chromium against a real ``toolspan
serve``: a waiting call decided by clicking with a decider token (the page shows the decider's name from
``/api/whoami``; an edit that is not a JSON object refused in the page, nothing sent; the note goes with
it), a running call cancelled by clicking, once confirmed, after a decider token was pasted (the
application's token gets no buttons), the inbox's Allow, Deny and Edit, and no buttons on a server without
deciders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, expect

from tests.server.test_control_live import (
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
from tests.support.server import running_server, wait_for
from toolspan import semconv

pytestmark = pytest.mark.processes


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
            assert "access_token" not in page.url  # the token moved to the tab's storage
            page.fill("#control-note", "logs only")
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
            expect(page.locator("#detail")).to_contain_text("allow by pat")  # the answer, then the approval
            _finish(app)
            # The result appears live: the call completes on the page, and the message is gone with it.
            expect(page.locator("#detail .badge")).to_have_text("COMPLETED", timeout=20_000)
            expect(page.locator("#detail")).to_contain_text("allow by pat")
            expect(page.locator("#detail")).to_contain_text("logs only")
            expect(page.locator("#control-result")).to_have_count(0)
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
            status, _, body = server.request(
                "GET", "/traces/" + entry["trace_id"], headers={"Authorization": ""}
            )
            assert status == 200  # without the token: the page without its data, asking for it
            assert b"watch_sync" not in body
            context = browser.new_context()
            page = context.new_page()
            page.goto(page_url)
            page.wait_for_selector("body[data-ready='1']")
            page.evaluate("(id) => window.toolspanPage.goTo(id)", entry["execution_id"])
            expect(page.locator("#control")).to_contain_text("This tab's token may read, not decide.")
            assert page.locator("#control-allow").count() == 0
            page.fill("#control-token", DECIDERS["ops"])
            page.click("#control-token-save")
            expect(page.locator("#control-by")).to_have_text("deciding as ops")
            page.click("#control-allow")
            expect(page.locator("#detail")).to_contain_text("allow by ops")  # the answer, then the approval
            wait_for(lambda: _bodies(tmp_path, "run"), "the body started")
            page.wait_for_selector("#live.on")
            expect(page.locator("#detail .badge")).to_have_text("RUNNING", timeout=20_000)
            page.fill("#control-note", "taking too long")
            page.click("#control-cancel")  # asks first
            expect(page.locator("#control .confirm")).to_have_text("Cancel this running call?")
            page.click("#control-cancel-no")
            assert page.locator("#control-cancel-yes").count() == 0
            page.click("#control-cancel")
            page.click("#control-cancel-yes")
            # (The answer shows until the call's new state arrives, which may be at once: the server says.)
            asked = f"/api/control/cancels?execution_id={entry['execution_id']}"
            (request,) = wait_for(lambda: server.get_json(asked)["cancels"], "the cancel request")
            assert (request["by"], request["note"]) == ("ops", "taking too long")
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
    assert span.attributes[semconv.TOOLSPAN_TOOL_CANCEL_NOTE] == "taking too long"


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


def _inbox(browser: Browser, url: str) -> Any:
    context = browser.new_context()
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']")
    return context, page


def test_the_inbox_allows_denies_and_edits_each_waiting_call(tmp_path: Path, browser: Browser) -> None:
    """Three applications wait: the application's token sees them and no button; a decider's token given in
    the page allows one with a note, denies one, and allows one with edited arguments; each call runs (or
    not) exactly as decided, recorded as that decider."""
    with running_server(tmp_path, "--token", TOKEN, *DECIDER_ARGS) as server:
        server.headers = dict(AUTH)
        apps = {name: _app(server, tmp_path, "gate", name) for name in ("one", "two", "three")}
        context = None
        try:
            wait_for(lambda: len(server.get_json("/api/control/waiting")["waiting"]) == 3, "three calls")
            context, page = _inbox(browser, f"{server.url}/inbox#access_token={TOKEN}")
            expect(page.locator(".card")).to_have_count(3)
            expect(page.locator("#notice")).to_contain_text("This tab's token may read, not decide.")
            assert page.locator(".card button").count() == 0
            page.fill("#decider-token", DECIDERS["pat"])
            page.click("#decider-token-go")
            expect(page.locator("#who")).to_have_text("deciding as pat")
            cards = page.locator(".card")
            expect(cards.locator("button.allow")).to_have_count(3)
            first, second, third = (cards.nth(i).get_attribute("data-execution") for i in range(3))
            page.fill(f"[id='note-{first}']", "checked the path")
            page.click(f"[id='allow-{first}']")
            expect(page.locator(f".card[data-execution='{first}'] .result")).to_contain_text(
                "Allowed by pat."
            )
            page.click(f"[id='deny-{second}']")
            expect(page.locator(f".card[data-execution='{second}'] .result")).to_contain_text(
                "Denied by pat."
            )
            page.click(f"[id='edit-{third}']")
            page.fill(f"[id='args-{third}']", '["no"]')
            page.click(f"[id='send-edit-{third}']")
            expect(page.locator(f".card[data-execution='{third}'] .problem")).to_have_text(
                "the arguments must be a JSON object"
            )
            page.fill(f"[id='args-{third}']", '{"path": "/srv/old/tmp"}')
            page.click(f"[id='send-edit-{third}']")
            for app in apps.values():
                _finish(app)
            expect(page.locator("#empty")).to_be_visible(timeout=20_000)  # every call went on
            # What this tab decided stays in sight with its answer after the calls left the inbox.
            done = page.locator("#decided-here")
            expect(done.locator(f".card[data-execution='{first}'] .result")).to_have_text("Allowed by pat.")
            expect(done.locator(f".card[data-execution='{second}'] .result")).to_have_text("Denied by pat.")
            # The call allowed with an edit shows the arguments it received, labelled edited (who, when), and
            # the model's own beside them; the one allowed as asked shows the model's arguments, unlabelled.
            edited = done.locator(f".card[data-execution='{third}']")
            expect(edited.locator("h3")).to_have_text(["Arguments (edited)", "The model's arguments"])
            expect(edited.locator("p.edited")).to_contain_text("Edited by pat at ")
            expect(edited.locator("pre.edited-args")).to_have_text('{\n  "path": "/srv/old/tmp"\n}')
            expect(edited.locator("pre.model-args")).to_have_text('{\n  "path": "/srv/old"\n}')
            plain = done.locator(f".card[data-execution='{first}']")
            expect(plain.locator("h3")).to_have_text(["Arguments"])
            expect(plain.locator("pre.args")).to_have_text('{\n  "path": "/srv/old"\n}')
        finally:
            if context is not None:
                context.close()
            for app in apps.values():
                app.kill()
    ran = {name: [b["arguments"] for b in _bodies(tmp_path, name)] for name in apps}
    by_execution = {}
    for name in apps:
        (span,) = _tool_spans(tmp_path, name)
        by_execution[f"exec_{span.span_id}"] = (name, _decided(span))
    decided = {by_execution[e][0]: by_execution[e][1] for e in (first, second, third)}
    names = [by_execution[e][0] for e in (first, second, third)]
    assert ran[names[0]] == [{"path": "/srv/old"}]
    assert ran[names[1]] == []  # denied: the body never ran
    assert ran[names[2]] == [{"path": "/srv/old/tmp"}]
    assert [decided[n][semconv.PERMISSION_DECISION] for n in names] == ["allow", "deny", "allow"]
    assert {decided[n][semconv.PERMISSION_DECIDED_BY] for n in names} == {"pat"}
    assert decided[names[0]][semconv.PERMISSION_NOTE] == "checked the path"


# The theme's colours of an error (a denial reads as one) and of success, light and dark (theme.css).
FAIL = {"light": "rgb(207, 34, 46)", "dark": "rgb(248, 81, 73)"}
OK = {"light": "rgb(45, 164, 78)", "dark": "rgb(63, 185, 80)"}


def test_a_decided_card_says_allowed_or_denied_in_its_colour_with_the_note(
    tmp_path: Path, browser: Browser
) -> None:
    """A decider allows one call and denies another, each with a note; once both went on, their cards
    stay in sight saying so: a badge reading Allowed or Denied where the waiting badge was, a denial in the
    theme's error colour and an allowance in its success colour, in the light and the dark theme, and the
    note the decider typed."""
    with running_server(tmp_path, "--token", TOKEN, *DECIDER_ARGS) as server:
        server.headers = dict(AUTH)
        apps = {name: _app(server, tmp_path, "gate", name) for name in ("one", "two")}
        context = None
        try:
            wait_for(lambda: len(server.get_json("/api/control/waiting")["waiting"]) == 2, "two calls")
            context, page = _inbox(browser, f"{server.url}/inbox#access_token={DECIDERS['pat']}")
            cards = page.locator("#cards .card")
            expect(cards.locator("button.allow")).to_have_count(2)
            allowed, denied = (cards.nth(i).get_attribute("data-execution") for i in range(2))
            page.fill(f"[id='note-{allowed}']", "logs only, fine")
            page.click(f"[id='allow-{allowed}']")
            expect(page.locator(f".card[data-execution='{allowed}'] .result")).to_have_text("Allowed by pat.")
            page.fill(f"[id='note-{denied}']", "not this path: it holds the backups")
            page.click(f"[id='deny-{denied}']")
            expect(page.locator(f".card[data-execution='{denied}'] .result")).to_have_text("Denied by pat.")
            for app in apps.values():
                _finish(app)
            expect(page.locator("#empty")).to_be_visible(timeout=20_000)  # both went on
            done = page.locator("#decided-here")
            no, yes = (
                done.locator(f".card[data-execution='{denied}']"),
                done.locator(f".card[data-execution='{allowed}']"),
            )
            expect(no.locator(".badge")).to_have_text("Denied")
            expect(yes.locator(".badge")).to_have_text("Allowed")
            expect(no.locator(".note-said")).to_have_text("Note: not this path: it holds the backups")
            expect(yes.locator(".note-said")).to_have_text("Note: logs only, fine")
            expect(no.locator(".note-said")).to_be_visible()
            color = "n => [getComputedStyle(n).color, getComputedStyle(n).backgroundColor]"
            for theme in ("light", "dark"):
                if theme == "dark":
                    page.click("#top-theme")
                assert page.evaluate("document.documentElement.dataset.theme || 'light'") == theme
                assert no.locator(".badge").evaluate(color) == ["rgb(255, 255, 255)", FAIL[theme]]
                assert yes.locator(".badge").evaluate(color) == ["rgb(255, 255, 255)", OK[theme]]
                assert no.locator(".result").evaluate(color)[0] == FAIL[theme]
                assert yes.locator(".result").evaluate(color)[0] == OK[theme]
            # The badge stands where the waiting one stood, before the tool's name: no blank gap.
            badge, name = no.locator(".badge").bounding_box(), no.locator("h2.tool").bounding_box()
            assert badge is not None
            assert name is not None
            assert badge["width"] > 30
            assert 0 <= name["x"] - (badge["x"] + badge["width"]) <= 12
        finally:
            if context is not None:
                context.close()
            for app in apps.values():
                app.kill()
    by_execution = {}
    for name in apps:
        (span,) = _tool_spans(tmp_path, name)
        by_execution[f"exec_{span.span_id}"] = _decided(span)
    assert by_execution[denied][semconv.PERMISSION_DECISION] == "deny"
    assert by_execution[denied][semconv.PERMISSION_NOTE] == "not this path: it holds the backups"
