"""A long run's trace page served by a real ``toolspan serve`` in headless Chromium: the first screen (its
first ``HEAD_STEPS`` steps, marked as loading) at once, then the whole document from the page stream, which
replaces it and keeps what the person selected and where they scrolled; a large document comes in parts
(``event: page-part``), and a connection cut among them starts them over."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from playwright.sync_api import Browser, Route

import toolspan
from tests.support.server import otlp_body, running_server, sse_stream, wait_for
from toolspan.bridge.readers import read_spans
from toolspan.bridge.views import to_pages
from toolspan.server._http.routes.pages import HEAD_STEPS
from toolspan.server._streams.page import PART_BYTES

pytestmark = pytest.mark.processes

CALLS = HEAD_STEPS + 40  # more steps than a first screen holds


def _long_run(notes: int = 0) -> list[ReadableSpan]:
    """A run of ``CALLS`` tool calls, each answering ``notes`` characters more."""

    @toolspan.tool
    def lookup(city: str) -> dict[str, Any]:
        return {"city": city, "notes": "n" * notes}

    with toolspan.testing.capture_spans() as finished:
        with toolspan.agent("tour", input="every city"):
            for i in range(CALLS):
                lookup(f"city-{i}")
        return list(finished())


_SCROLL_TOP = "document.getElementById('timeline').scrollTop"
_WHOLE = "!document.body.classList.contains('partial')"


def _embedded(html: str) -> Any:
    found = re.search(r'<script id="ts-data" type="application/json">(.*?)</script>', html, re.S)
    assert found is not None
    return json.loads(found.group(1))


def test_a_long_run_is_served_with_its_first_screen_then_its_whole_document(
    tmp_path: Path, browser: Browser
) -> None:
    spans = _long_run()
    body = otlp_body(spans)
    trace_id = format(spans[0].context.trace_id, "032x")
    (whole,) = to_pages(read_spans(body)[0], live=True)
    with running_server(tmp_path) as server:
        assert server.post_otlp(body)[0] == 200
        status, headers, raw = server.request("GET", f"/traces/{trace_id}")
        html = raw.decode("utf-8")
        # The HTML holds the first screen only: the first steps of the whole document, marked partial.
        assert status == 200
        assert {k.lower(): v for k, v in headers.items()}["cache-control"] == "no-store"
        head = _embedded(html)
        assert head["partial"] is True
        assert [s["id"] for s in head["steps"]] == [s["id"] for s in whole["steps"][:HEAD_STEPS]]
        assert '"version"' not in html  # no tag: the page stream sends the whole document first

        held: list[Route] = []
        released = threading.Event()

        def hold(route: Route) -> None:
            if released.is_set():
                route.continue_()
            else:
                held.append(route)

        ctx = browser.new_context(viewport={"width": 1200, "height": 800})
        page = ctx.new_page()
        problems: list[str] = []
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.route(re.compile(r".*/page/stream.*"), hold)
        try:
            page.goto(f"{server.url}/traces/{trace_id}")
            page.wait_for_selector("body[data-ready='1']")
            wait_for(lambda: page.locator("#timeline .row").count(), "the first rows")
            # The first screen: its rows drawn, marked as loading, nothing claimed of the whole run yet.
            assert not page.evaluate(_WHOLE)
            assert page.get_attribute("#timeline", "aria-busy") == "true"
            assert page.get_attribute("#tree", "aria-busy") == "true"
            assert page.text_content("#count") == f"the first {HEAD_STEPS} steps, loading the rest\u2026"
            assert "loading the whole run" in (page.text_content("#meta") or "")
            assert page.is_disabled("#download")
            assert page.locator("#timeline .row", has_text="lookup").count() > 0
            # The person selects a step and scrolls while the rest loads.
            chosen = whole["steps"][HEAD_STEPS - 10]["id"]  # below the first rows in view
            page.evaluate("(id) => window.toolspanPage.goTo(id)", chosen)
            wait_for(lambda: page.evaluate(_SCROLL_TOP), "the timeline scrolled to the step")
            scrolled = page.evaluate(_SCROLL_TOP)
            assert page.evaluate("window.toolspanPage.selected()") == chosen
            # The whole document arrives: it replaces the first screen, the selection and the scroll kept.
            # (each call into the browser lets the route's handler run)
            wait_for(lambda: held or page.evaluate("[]"), "the page stream's request")
            released.set()
            held.pop().continue_()
            wait_for(lambda: page.evaluate(_WHOLE), "the whole document")
            assert page.text_content("#count") == f"{len(whole['steps'])} steps"
            assert page.get_attribute("#timeline", "aria-busy") is None
            assert not page.is_disabled("#download")
            assert page.evaluate("window.toolspanPage.selected()") == chosen
            assert page.evaluate(_SCROLL_TOP) == scrolled
            assert page.get_attribute("#live", "data-pages") == "1"
            assert problems == []
        finally:
            ctx.close()


def test_a_large_document_comes_in_parts_and_a_connection_cut_among_them_starts_them_over(
    tmp_path: Path, browser: Browser
) -> None:
    spans = _long_run(notes=2 * PART_BYTES // CALLS)  # a document of more than PART_BYTES: sent in parts
    body = otlp_body(spans)
    trace_id = format(spans[0].context.trace_id, "032x")
    (whole,) = to_pages(read_spans(body)[0], live=True)
    path = f"/api/traces/{trace_id}/page/stream"
    with running_server(tmp_path) as server:
        assert server.post_otlp(body)[0] == 200
        stream = sse_stream(server, path)
        sent = []
        for event in stream:
            sent.append(event)
            if event.event == "page":
                break
        stream.close()
        parts = len(sent) - 1
        assert parts >= 2
        assert [e.event for e in sent[:parts]] == ["page-part"] * parts
        # The page's first connection is cut after the first part (its response ends there): its EventSource
        # connects again, and that connection reaches the server.
        cut = b"retry: 1000\n: connected\n\nevent: page-part\ndata: %s\n\n" % sent[0].data.encode("utf-8")
        held: list[Route] = []
        connections = []

        def hold(route: Route) -> None:
            connections.append(route.request.url)
            if len(connections) == 1:
                held.append(route)
            else:
                route.continue_()

        ctx = browser.new_context(viewport={"width": 1200, "height": 800})
        page = ctx.new_page()
        problems: list[str] = []
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        # Every state the live badge's stream goes through.
        page.add_init_script(
            "new MutationObserver(() => { const s = document.getElementById('live').dataset.stream;"
            " (window.__states = window.__states || []).push(s); })"
            ".observe(document, { subtree: true, attributes: true, attributeFilter: ['data-stream'] });"
        )
        page.route(re.compile(r".*/page/stream.*"), hold)
        try:
            page.goto(f"{server.url}/traces/{trace_id}")
            page.wait_for_selector("body[data-ready='1']")
            chosen = whole["steps"][HEAD_STEPS - 10]["id"]
            page.evaluate("(id) => window.toolspanPage.goTo(id)", chosen)
            wait_for(lambda: page.evaluate(_SCROLL_TOP), "the timeline scrolled to the step")
            scrolled = page.evaluate(_SCROLL_TOP)
            wait_for(lambda: held or page.evaluate("[]"), "the page stream's request")
            held.pop().fulfill(status=200, headers={"Content-Type": "text/event-stream"}, body=cut)
            wait_for(lambda: page.evaluate(_WHOLE), "the whole document")
            assert len(connections) == 2
            assert "version=" not in connections[1]  # it held no document: nothing to resume from
            assert page.text_content("#count") == f"{len(whole['steps'])} steps"
            assert page.get_attribute("#live", "data-parts") == str(1 + parts)  # all of them again
            assert page.get_attribute("#live", "data-pages") == "1"
            assert "failed" not in page.evaluate("window.__states || []")  # the parts added up at once
            assert page.evaluate("window.toolspanPage.selected()") == chosen
            assert page.evaluate(_SCROLL_TOP) == scrolled
            assert not page.is_disabled("#download")
            assert problems == []
        finally:
            ctx.close()


def test_a_short_run_is_served_whole(tmp_path: Path) -> None:
    @toolspan.tool
    def lookup(city: str) -> str:
        return city

    with toolspan.testing.capture_spans() as finished:
        with toolspan.agent("short", input="one city"):
            lookup("Paris")
        spans = list(finished())
    body = otlp_body(spans)
    trace_id = format(spans[0].context.trace_id, "032x")
    with running_server(tmp_path) as server:
        assert server.post_otlp(body)[0] == 200
        html = server.request("GET", f"/traces/{trace_id}")[2].decode("utf-8")
    (whole,) = to_pages(read_spans(body)[0], live=True)
    assert _embedded(html) == whole
    assert '"version"' in html
