"""The trace page in real headless Chromium (Debian's ``chromium``, driven by Playwright for Python).

``scripts/test.sh`` installs the browser when it is missing; without it these tests fail (never skip).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import re
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

import toolspan
from tests.support.page_data import big_run, hostile_payloads, hostile_run
from toolspan.bridge import write_json_lines
from toolspan.bridge.model import Span, SpanEvent
from toolspan.bridge.readers import from_readable_spans
from toolspan.bridge.views import to_events, to_pages
from toolspan.page import WORDS, LiveOptions, page_json, render_html
from toolspan.testing import capture_spans

pytestmark = pytest.mark.processes

# Defined before any page script runs: a hostile payload that executes calls it or sets __pwned.
WATCH = """
window.__pwnCalls = 0;
window.__pwn = () => { window.__pwnCalls += 1; };
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI);
});
"""


class Opened:
    def __init__(self, page: Page) -> None:
        self.page = page
        self.requests: list[str] = []
        self.errors: list[str] = []
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("pageerror", lambda e: self.errors.append(str(e)))


@pytest.fixture
def open_page(browser: Browser, tmp_path: Path) -> Iterator[Callable[..., Opened]]:
    contexts = []

    def _open(
        html: str | None = None, url: str | None = None, width: int = 1280, hash_: str = "", height: int = 900
    ) -> Opened:
        context = browser.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        page = context.new_page()
        page.add_init_script(WATCH)
        opened = Opened(page)
        if html is not None:
            path = tmp_path / f"page{len(contexts)}.html"
            path.write_text(html, "utf-8")
            url = path.as_uri()
        assert url is not None
        page.goto(url + hash_)
        page.wait_for_selector("body[data-ready='1']")
        return opened

    yield _open
    for context in contexts:
        context.close()


def demo_spans() -> list[Span]:
    """A run with a sub-plan, a failure and a denial, from the real instrumentation."""

    @toolspan.tool
    def get_weather(city: str) -> dict[str, Any]:
        """Current weather."""
        return {"city": city, "temp_c": 18}

    @toolspan.tool
    def explode(n: int) -> int:
        """Always fails."""
        raise ValueError(f"bad n {n}")

    @toolspan.tool
    def research(topic: str) -> str:
        """Research a topic in a sub-plan."""
        with toolspan.plan("research " + topic), toolspan.agent("researcher", input=topic):
            toolspan.thought("Look it up.")
            get_weather("Oslo")
        return "notes"

    with capture_spans(deterministic=True) as finished:
        with toolspan.agent("assistant", input="Weather?", conversation_id="conv-1") as run:
            toolspan.thought("Check the weather, then research.")
            get_weather("Paris")
            research("clouds")
            with contextlib.suppress(ValueError):
                explode(3)
            run.set_output("18 C")
        return from_readable_spans(finished())


def visible_labels(page: Page, host: str) -> list[str]:
    return page.eval_on_selector_all(
        f"#{host} .row", "rows => rows.map(r => [r.offsetTop, r.querySelector('.label').textContent])"
    )


def labels_in_order(page: Page, host: str) -> list[str]:
    return [label for _top, label in sorted(visible_labels(page, host))]


def test_click_a_step_shows_its_details_and_follows_links(open_page: Callable[..., Opened]) -> None:
    pages = to_pages(demo_spans())
    opened = open_page(render_html(pages))
    page = opened.page
    assert labels_in_order(page, "timeline") == [
        "assistant",
        "get_weather",
        "research",
        "research clouds",
        "researcher",
        "get_weather",
        "explode",
    ]
    page.click("#timeline .row:has-text('explode')")
    detail = page.locator("#detail")
    assert detail.locator(".badge").inner_text() == "FAILED"
    text = detail.inner_text()
    expected_texts = ("explode", "execution_id", "tool_call_id", '"n": 3', "ValueError", "bad n 3")
    for expected in (*expected_texts, "Traceback"):
        assert expected in text, expected
    explode = next(s for s in pages[0]["steps"] if s["label"] == "explode")
    expect(page).to_have_url(re.compile("#" + explode["execution_id"] + "$"))
    # research -> its sub-plan -> back to the tool that started it.
    page.click("#timeline .row:has-text('research') >> nth=0")
    page.click("#detail a.step:has-text('sub-plan research clouds')")
    assert detail.locator("h3").inner_text().endswith("research clouds")
    page.click("#detail a.step:has-text('started by research')")
    assert detail.locator("h3").inner_text().endswith("research")
    assert detail.locator(".json").first.inner_text().replace("\n", " ").count('"topic": "clouds"') == 1
    # The tree's selection follows, and selecting in the tree updates the timeline.
    assert page.locator("#tree .row[aria-selected='true'] .label").inner_text() == "research"
    page.click("#tree .row:has-text('researcher')")
    assert page.locator("#timeline .row[aria-selected='true'] .label").inner_text() == "researcher"
    # The conversation view shows the turn.
    conv = page.locator("#conversation").inner_text()
    assert "Weather?" in conv
    assert "Check the weather, then research." in conv
    assert "18 C" in conv
    assert opened.errors == []
    assert page.evaluate("window.__cspViolations") == []


def test_deep_link_filter_search_and_keyboard(open_page: Callable[..., Opened]) -> None:
    pages = to_pages(demo_spans())
    steps = pages[0]["steps"]
    target = next(s for s in steps if s["label"] == "research")
    opened = open_page(render_html(pages), hash_="#" + target["execution_id"])
    page = opened.page
    assert page.locator("#detail h3").inner_text().endswith("research")
    # Filter by state through the legend, then by tool name, then by text.
    page.click(".legend button[data-state='FAILED']")
    assert labels_in_order(page, "timeline") == ["explode"]
    page.click(".legend button[data-state='FAILED']")
    page.select_option("#tools", "get_weather")
    assert labels_in_order(page, "timeline") == ["get_weather", "get_weather"]
    page.select_option("#tools", "")
    page.keyboard.press("/")
    page.keyboard.type("oslo")
    expect(page.locator("#count")).to_have_text("1 of 7 steps")
    assert labels_in_order(page, "timeline") == ["get_weather"]
    page.fill("#search", "")
    expect(page.locator("#count")).to_have_text("7 steps")
    # Keyboard only: focus the timeline, walk with the arrows, Home/End.
    page.focus("#timeline")
    page.keyboard.press("Home")
    assert page.locator("#detail h3").inner_text().endswith("assistant")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert page.locator("#detail h3").inner_text().endswith("research")
    page.keyboard.press("End")
    assert page.locator("#detail h3").inner_text().endswith("explode")
    # In the tree: Left collapses, Right expands, Enter moves focus to the details.
    page.focus("#tree")
    page.keyboard.press("Home")
    page.keyboard.press("ArrowLeft")
    assert labels_in_order(page, "tree") == ["assistant"]
    page.keyboard.press("ArrowRight")
    assert len(labels_in_order(page, "tree")) == len(steps)
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "detail"
    assert opened.errors == []


def cross_trace_spans() -> list[Span]:
    """Two traces: a tool in the first starts a sub-plan in a new trace (``new_trace=True``)."""

    @toolspan.tool
    def lookup(q: str) -> str:
        """Look up."""
        return q.upper()

    @toolspan.tool
    def spawn(job: str) -> str:
        """Start a job in its own trace."""
        with toolspan.plan("job " + job, new_trace=True):
            lookup(job)
        return "started"

    with capture_spans(deterministic=True) as finished:
        with toolspan.agent("boss", input="go"):
            spawn("nightly")
        return from_readable_spans(finished())


def test_trace_picker_and_links_across_traces(open_page: Callable[..., Opened]) -> None:
    pages = to_pages(cross_trace_spans())
    assert [p["title"] for p in pages] == ["go", "job nightly"]  # what was asked, else the root's name
    opened = open_page(render_html(pages))
    page = opened.page
    assert page.locator("#trace").is_visible()
    assert labels_in_order(page, "timeline") == ["boss", "spawn"]
    page.click("#timeline .row:has-text('spawn')")
    page.click("#detail a.step:has-text('sub-plan job nightly')")
    assert page.locator("#trace").input_value() == "1"
    assert labels_in_order(page, "timeline") == ["job nightly", "lookup"]
    assert page.locator("#detail h3").inner_text().endswith("job nightly")
    page.click("#detail a.step:has-text('started by spawn')")
    assert page.locator("#trace").input_value() == "0"
    page.select_option("#trace", "1")
    assert page.locator("#title").inner_text() == "job nightly"
    with page.expect_download() as info:
        page.click("#download")
    assert info.value.suggested_filename == f"trace-{pages[1]['trace_id']}.json"
    assert json.loads(Path(info.value.path()).read_text("utf-8")) == pages[1]
    assert opened.errors == []


def test_unknown_or_malformed_deep_links_leave_the_page_working(open_page: Callable[..., Opened]) -> None:
    html = render_html(to_pages(demo_spans()))
    for hash_ in ("#exec_0000000000000000", "#%E0%A4%A", "#<img src=x onerror=__pwn()>"):
        opened = open_page(html, hash_=hash_)
        assert opened.page.locator("#detail").inner_text().startswith("Select a step")
        assert opened.errors == []
        assert opened.page.evaluate("window.__pwnCalls") == 0


def test_empty_input_gives_an_empty_page(open_page: Callable[..., Opened]) -> None:
    opened = open_page(render_html([]))
    assert opened.page.locator("#detail").inner_text() == "This trace has no spans."
    assert opened.page.locator("#trace").is_hidden()
    assert opened.errors == []


def test_copy_button_copies_the_arguments(browser: Browser, tmp_path: Path) -> None:
    path = tmp_path / "run.html"
    pages = to_pages(demo_spans())
    path.write_text(render_html(pages), "utf-8")
    context = browser.new_context()
    try:
        page = context.new_page()
        explode = next(s["execution_id"] for s in pages[0]["steps"] if s["label"] == "explode")
        page.goto(path.as_uri() + "#" + explode)
        page.wait_for_selector("body[data-ready='1']")
        page.click("#detail h4:has-text('Arguments') button")
        expect(page.locator("#detail h4:has-text('Arguments') button")).to_have_text("copied")
        # Read back what the page put on the clipboard: paste it into the search box.
        page.focus("#search")
        page.keyboard.press("Control+V")
        assert json.loads(page.input_value("#search")) == {"n": 3}
    finally:
        context.close()


def test_keyboard_alone_reaches_the_links_and_follows_them(open_page: Callable[..., Opened]) -> None:
    page = open_page(render_html(to_pages(demo_spans()))).page
    # Tab from the top of the page into the timeline, pick "research" with the arrows, then Tab on to
    # the sub-plan link in the details and follow it with Enter.
    page.keyboard.press("Tab")
    for _ in range(30):
        if page.evaluate("document.activeElement.id") == "timeline":
            break
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "timeline"
    page.keyboard.press("Home")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert page.locator("#detail h3").inner_text().endswith("research")
    page.keyboard.press("Enter")
    for _ in range(30):
        if page.evaluate("document.activeElement.textContent").startswith("\u2193 sub-plan"):
            break
        page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    assert page.locator("#detail h3").inner_text().endswith("research clouds")


def test_every_state_has_its_colour_and_approval_waits_their_segment(
    open_page: Callable[..., Opened],
) -> None:
    from tests.support.page_data import MS, T0
    from toolspan import semconv as sc

    def tool(n: int, state: str | None, end: int | None, events: tuple[SpanEvent, ...] = ()) -> Span:
        attrs: dict[str, Any] = {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: f"t{n}"}
        if state is not None:
            attrs[sc.TOOLSPAN_TOOL_STATE] = state
        return Span(
            "ef" * 16, f"{n:016x}", None, "execute_tool", T0 + n * MS, end, attributes=attrs, events=events
        )

    asked = (SpanEvent(sc.PERMISSION_REQUIRED_EVENT, T0 + 8 * MS, {}),)
    allowed = (*asked, SpanEvent(sc.PERMISSION_DECIDED_EVENT, T0 + 9 * MS, {sc.PERMISSION_DECISION: "allow"}))
    states = ["COMPLETED", "FAILED", "CANCELLED", "DENIED", "SEALED"]
    spans = [tool(n, state, T0 + 20 * MS) for n, state in enumerate(states, 1)]
    spans += [tool(6, None, None), tool(7, None, None, asked), tool(8, "COMPLETED", T0 + 12 * MS, allowed)]
    page = open_page(render_html(to_pages(spans, live=True))).page
    rows = page.eval_on_selector_all(
        "#timeline .row",
        """rows => rows.map(r => [r.querySelector('.label').textContent,
             r.querySelector('.dot').className, getComputedStyle(r.querySelector('.dot')).backgroundColor,
             r.querySelectorAll('.bar .wait').length])""",
    )
    by_label = {label: (cls, colour, waits) for label, cls, colour, waits in rows}
    expected = [*states, "RUNNING", "AWAITING_APPROVAL"]
    assert [by_label[f"t{n}"][0] for n in range(1, 8)] == [f"dot s-{s}" for s in expected]
    assert len({by_label[f"t{n}"][1] for n in range(1, 8)}) == 7
    # The approval waits: one still open (to the end of the trace), one decided after 1 ms.
    assert [by_label[f"t{n}"][2] for n in range(1, 9)] == [0, 0, 0, 0, 0, 0, 1, 1]


def test_download_gives_the_trace_json(open_page: Callable[..., Opened]) -> None:
    pages = to_pages(demo_spans())
    page = open_page(render_html(pages)).page
    with page.expect_download() as info:
        page.click("#download")
    download = info.value
    assert download.suggested_filename == f"trace-{pages[0]['trace_id']}.json"
    assert json.loads(Path(download.path()).read_text("utf-8")) == pages[0]


def test_phone_width_and_dark_scheme(open_page: Callable[..., Opened]) -> None:
    page = open_page(render_html(to_pages(demo_spans())), width=390).page
    widths = page.evaluate(
        "[document.documentElement.scrollWidth, document.getElementById('timeline').clientWidth]"
    )
    assert widths[0] <= 390
    assert widths[1] > 300
    page.click("#timeline .row >> nth=1")
    # The details take the height their content needs (they shrank to a sliver), below a timeline as tall
    # as its rows; the axis labels shown do not overlap.
    detail = page.evaluate("document.getElementById('detail').getBoundingClientRect().height")
    assert detail > 300
    rows = page.evaluate("document.querySelectorAll('#timeline .row').length")
    timeline = page.evaluate("document.getElementById('timeline').getBoundingClientRect().height")
    assert timeline <= 18 + rows * 24 + 8
    ticks = page.eval_on_selector_all(
        "#axis .ticks span",
        "spans => spans.filter(s => getComputedStyle(s).display !== 'none')"
        ".map(s => { const r = s.getBoundingClientRect(); return [r.left, r.right]; })",
    )
    assert len(ticks) >= 2
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ticks)), ticks
    light = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.click("#theme")
    dark = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert {light, dark} == {"rgb(255, 255, 255)", "rgb(13, 17, 23)"}


def test_hostile_corpus_runs_nothing_requests_nothing_and_shows_everything_as_text(
    open_page: Callable[..., Opened],
) -> None:
    payloads = hostile_payloads()
    pages = to_pages(hostile_run(payloads))
    opened = open_page(render_html(pages))
    page = opened.page
    page_url = page.url.split("#")[0]
    steps = pages[0]["steps"]
    # Every step (agent, then its tool) is selected in turn; its payload must be in the details' text,
    # once per field the details show.
    cases = [[s["id"], i // 2] for i, s in enumerate(steps)]
    missing = page.evaluate(
        """([cases, payloads]) => {
          const bad = [];
          const detail = document.getElementById('detail');
          for (const [id, n] of cases) {
            const p = payloads[n];
            window.toolspanPage.goTo(id);
            const parts = detail.textContent.split(p).length - 1;
            if (parts < 5) bad.push([id, parts]);
          }
          return bad;
        }""",
        [cases, payloads],
    )
    assert missing == []
    conv = page.evaluate("document.getElementById('conversation').textContent")
    assert all(p in conv for p in payloads[:20])
    # Scroll through the whole timeline and tree: every row renders its label as text.
    page.evaluate(
        """() => { for (const id of ['timeline', 'tree']) {
             const h = document.getElementById(id);
             for (let y = 0; y < h.scrollHeight; y += 400) {
               h.scrollTop = y; h.dispatchEvent(new Event('scroll'));
             }
           } }"""
    )
    page.wait_for_timeout(50)
    assert page.evaluate("[window.__pwnCalls, window.__pwned]") == [0, None]
    assert page.evaluate("window.__cspViolations") == []
    assert opened.requests == [page_url]
    assert opened.errors == []
    # No element came from the data: only the template's own kinds of elements exist.
    tags = set(page.evaluate("Array.from(document.querySelectorAll('*'), e => e.localName)"))
    assert tags <= {
        "html", "head", "meta", "link", "title", "style", "body", "header", "h1", "h2", "h3", "h4", "span",
        "select", "option", "input", "label", "button", "nav", "main", "section", "div", "p", "script",
        "dl", "dt", "dd", "pre", "details", "summary", "a", "ol",
    }  # fmt: skip
    assert page.evaluate("document.querySelectorAll('script').length") == 4  # config, data, common, page
    assert page.evaluate("Array.from(document.querySelectorAll('a'), a => a.getAttribute('href'))") == [
        None
    ] * page.evaluate("document.querySelectorAll('a').length")


def _events_bytes(spans: list[Span]) -> int:
    out = io.BytesIO()
    write_json_lines(to_events(spans), out)
    return len(out.getvalue())


@pytest.fixture(scope="module")
def big() -> tuple[list[Span], str]:
    spans = big_run(10_000)
    return spans, render_html(to_pages(spans))


def test_ten_thousand_calls_stay_small_and_virtualised(
    big: tuple[list[Span], str], open_page: Callable[..., Opened]
) -> None:
    spans, html = big
    tools = sum(1 for s in spans if s.name.startswith("execute_tool"))
    assert tools == 10_000
    ratio = len(html.encode("utf-8")) / _events_bytes(spans)
    assert ratio <= 1.5, ratio
    opened = open_page(html)
    page = opened.page
    rows = page.evaluate("document.querySelectorAll('.row').length")
    assert 0 < rows <= 300
    page.evaluate("() => { const t = document.getElementById('timeline'); t.scrollTop = t.scrollHeight; }")
    expect(page.locator(f"#timeline .row[data-step='{len(spans) - 1}']")).to_have_count(1)
    assert page.evaluate("document.querySelectorAll('.row').length") <= 300
    page.click("#collapse-all")
    assert page.evaluate("document.querySelectorAll('#tree .row').length") == 1
    page.click("#expand-all")
    assert 10 < page.evaluate("document.querySelectorAll('#tree .row').length") <= 300
    page.focus("#timeline")
    page.keyboard.press("End")
    assert page.locator("#detail .badge").inner_text() in {"COMPLETED", "FAILED"}
    assert opened.errors == []


# --- live mode -------------------------------------------------------------------------------------


class LiveServer:
    """A small local server with the live contract: the page, its data, and an SSE stream."""

    def __init__(self) -> None:
        self.data = "[]"
        self.event = "message"
        self.cond = threading.Condition()
        self.version = 0
        self.closing = False
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/stream":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-store")
                    self.end_headers()
                    seen = [server.version]
                    name = server.event
                    while True:
                        with server.cond:
                            server.cond.wait_for(
                                lambda: server.version != seen[0] or server.closing, timeout=0.5
                            )
                            if server.closing:
                                return
                            changed = server.version != seen[0]
                            seen[0] = server.version
                            name = server.event
                        try:
                            event = f"event: {name}\ndata: changed\n\n" if changed else ": keep-alive\n\n"
                            self.wfile.write(event.encode())
                            self.wfile.flush()
                        except OSError:
                            return
                body = (
                    server.html.encode()
                    if self.path == "/page"
                    else server.data.encode()
                    if self.path == "/data"
                    else None
                )
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                kind = "text/html" if self.path == "/page" else "application/json"
                self.send_header("Content-Type", kind + "; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.html = ""
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def publish(self, spans: list[Span], event: str = "message") -> None:
        """New data, announced by an SSE event named ``event``."""
        pages = to_pages(spans, live=True)
        with self.cond:
            self.event = event
            self.data = page_json(pages)
            if not self.html:
                self.html = render_html(pages, live=LiveOptions(stream_url="/stream", data_url="/data"))
            self.version += 1
            self.cond.notify_all()

    def close(self) -> None:
        with self.cond:
            self.closing = True
            self.cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()


def test_live_mode_shows_running_tools_finish(open_page: Callable[..., Opened]) -> None:
    from dataclasses import replace

    from tests.support.page_data import MS, T0
    from toolspan import semconv as sc

    def tool(n: int, start: int, end: int | None) -> Span:
        return Span(
            trace_id="cd" * 16,
            span_id=f"{n:016x}",
            parent_span_id=f"{1:016x}",
            name="execute_tool step",
            start_ns=T0 + start * MS,
            end_ns=None if end is None else T0 + end * MS,
            attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: f"step{n}"},
        )

    agent_attrs = {sc.GEN_AI_AGENT_NAME: "live", sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT}
    agent = Span("cd" * 16, f"{1:016x}", None, "invoke_agent live", T0, None, attributes=agent_attrs)
    done = [tool(n, n * 10, n * 10 + 5) for n in range(2, 60)]
    server = LiveServer()
    try:
        server.publish([agent, *done, tool(60, 600, None)])
        opened = open_page(url=f"http://127.0.0.1:{server.port}/page")
        page = opened.page
        page.wait_for_selector("#live.on")
        page.evaluate("window.toolspanPage.goTo('exec_' + (60).toString(16).padStart(16, '0'))")
        assert page.locator("#detail .badge").inner_text() == "RUNNING"
        expect(page.locator("#timeline .row[aria-selected='true']")).to_be_in_viewport()
        scroll = page.evaluate("document.getElementById('timeline').scrollTop")
        assert scroll > 0
        # Running bars grow with the clock: the tool started at 600 ms, the last time the trace recorded;
        # at 1,500 ms (the page's clock) it spans the last 60% of the run.
        bar = page.locator("#timeline .row[aria-selected='true'] .bar")
        assert bar.get_attribute("style") == "left: 100%; width: 0%;"
        page.clock.set_fixed_time(datetime.fromtimestamp((T0 + 1500 * MS) / 1e9, tz=timezone.utc))
        expect(bar).to_have_attribute("style", "left: 40%; width: 60%;")
        # The running tool finishes (announced by an unnamed event), then a new one starts (announced as
        # the act/observe stream would name it).
        server.publish([agent, *done, tool(60, 600, 650)])
        expect(page.locator("#detail .badge")).to_have_text("COMPLETED")
        server.publish(
            [replace(agent, end_ns=T0 + 800 * MS), *done, tool(60, 600, 650), tool(61, 700, 750)], "observe"
        )
        expect(page.locator("#timeline")).to_contain_text("step61")
        assert page.locator("#detail h3").inner_text().endswith("step60")
        assert page.evaluate("document.getElementById('timeline').scrollTop") == scroll
        assert "step61" in page.locator("#timeline").inner_text()
        assert page.evaluate("window.__cspViolations") == []
        assert opened.errors == []
        assert {u.split("?")[0] for u in opened.requests} == {
            f"http://127.0.0.1:{server.port}/{p}" for p in ("page", "stream", "data")
        }
    finally:
        server.close()


def test_critical_path_is_off_until_asked_for_and_outcomes_are_not_errors(
    open_page: Callable[..., Opened],
) -> None:
    """The critical path outlines nothing until its box is ticked; a denied or cancelled call says how it
    ended in plain words, not in the red of an error, while a failure stays red."""
    from toolspan.errors import ToolCancelled

    @toolspan.tool
    def remove(path: str) -> str:
        return "removed"

    @toolspan.tool
    def watch(n: int) -> str:
        raise ToolCancelled("enough", by="ops")

    @toolspan.tool
    def explode(n: int) -> int:
        raise ValueError("bad")

    with capture_spans(deterministic=True) as finished:
        with toolspan.agent("assistant", input="Clean up."):
            toolspan.run_tool_calls(
                [{"type": "tool_use", "id": "t1", "name": "remove", "input": {"path": "/"}}],
                [remove],
                approve=lambda call: toolspan.Approval("deny", note="not the root"),
            )
            toolspan.run_tool_calls(
                [{"type": "tool_use", "id": "t2", "name": "watch", "input": {"n": 1}}], [watch]
            )
            with contextlib.suppress(ValueError):
                explode(1)
        spans = from_readable_spans(finished())
    page = open_page(render_html(to_pages(spans))).page
    outlined = (
        "Array.from(document.querySelectorAll('#timeline .row.crit .bar'))"
        ".filter(b => getComputedStyle(b).outlineStyle !== 'none').length"
    )
    assert page.evaluate(outlined) == 0
    page.check("#crit")
    assert page.evaluate(outlined) > 0
    for label, title, box in (
        ("remove", "Denied", "outcome"),
        ("watch", "Cancelled", "outcome"),
        ("explode", "Error", "error"),
    ):
        page.locator("#timeline .row", has_text=label).first.click()
        headings = page.eval_on_selector_all("#detail h4", "hs => hs.map(h => h.firstChild.textContent)")
        assert title in headings, (label, headings)
        assert page.locator(f"#detail .{box}").count() == 1, label
    page.locator("#timeline .row", has_text="remove").first.click()
    colour = page.evaluate("getComputedStyle(document.querySelector('#detail .outcome pre')).borderColor")
    page.locator("#timeline .row", has_text="explode").first.click()
    red = page.evaluate("getComputedStyle(document.querySelector('#detail .error pre')).borderColor")
    assert colour != red


def _tools_run(trace: str, count: int, open_last: bool = False) -> list[Span]:
    """A run of agent ``worker``: ``count`` tool calls one after the other (the last one still running with
    ``open_last``: the agent too)."""
    from tests.support.page_data import MS, T0
    from toolspan import semconv as sc

    end = None if open_last else T0 + (count * 10 + 5) * MS
    agent_attrs = {sc.GEN_AI_AGENT_NAME: "worker", sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT}
    spans = [Span(trace, f"{1:016x}", None, "invoke_agent worker", T0, end, attributes=agent_attrs)]
    for n in range(2, count + 2):
        last = n == count + 1
        spans.append(
            Span(
                trace_id=trace,
                span_id=f"{n:016x}",
                parent_span_id=f"{1:016x}",
                name="execute_tool step",
                start_ns=T0 + n * 10 * MS,
                end_ns=None if open_last and last else T0 + (n * 10 + 5) * MS,
                attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: f"step{n}"},
            )
        )
    return spans


def _box(page: Page, selector: str) -> dict[str, float]:
    return page.eval_on_selector(
        selector,
        "n => { const r = n.getBoundingClientRect();"
        " return {top: r.top, bottom: r.bottom, height: r.height}; }",
    )


def test_the_toolbar_holds_its_controls_on_one_row_at_1280_the_theme_among_them(
    open_page: Callable[..., Opened],
) -> None:
    """At 1280x800 the controls of what is shown (the trace picker, search, the tool filter, critical path,
    Download JSON, Theme) share one row, side by side, the theme button next to the others: with two
    traces to pick from, a run's name as long as a name gets and a long tool name."""
    pages = to_pages(cross_trace_spans())
    pages[0]["title"] = "Summarise every open incident of the week and draft the report " * 4
    pages[0]["steps"][1]["label"] = "a_tool_whose_name_goes_on_" * 6
    page = open_page(render_html(pages), width=1280, height=800).page
    controls = page.eval_on_selector_all(
        "header button, header select, header input, header label",
        "ns => ns.filter(n => n.offsetParent !== null && !n.closest('label:not(:scope)'))"
        ".map(n => { const r = n.getBoundingClientRect();"
        " return {id: n.id || n.textContent.trim(),"
        " top: r.top, bottom: r.bottom, left: r.left, right: r.right}; })",
    )
    assert [c["id"] for c in controls] == ["trace", "search", "tools", "critical path", "download", "theme"]
    assert max(c["top"] for c in controls) < min(c["bottom"] for c in controls), controls  # one row
    gaps = [b["left"] - a["right"] for a, b in itertools.pairwise(controls)]
    assert all(0 <= gap <= 12 for gap in gaps), gaps  # side by side, the theme button with the rest
    assert controls[-1]["right"] <= 1280
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280


def test_a_small_run_fills_its_timeline_pane_and_a_long_one_keeps_its_share(
    open_page: Callable[..., Opened],
) -> None:
    """At 1280x800 the timeline's pane (and the details beside it) is as tall as a small run's rows, so no
    blank pane is left under them; a long run's pane keeps its share of the window (62%) and scrolls."""
    page = open_page(render_html(to_pages(demo_spans())), width=1280, height=800).page
    rows = page.locator("#timeline .row")
    expect(rows).to_have_count(7)
    timeline = _box(page, "#timeline")
    last = max(_box(page, f"#timeline .row >> nth={i}")["bottom"] for i in range(7))
    blank = timeline["bottom"] - last
    assert 0 <= blank < timeline["height"] / 4, (blank, timeline)
    assert _box(page, "#detail-panel")["bottom"] == _box(page, "#timeline-panel")["bottom"]
    assert _box(page, ".lower")["top"] == _box(page, "#panes")["bottom"]
    # A long run: the pane takes its share and its rows scroll.
    page = open_page(render_html(to_pages(_tools_run("ab" * 16, 60))), width=1280, height=800).page
    assert _box(page, "#panes")["height"] == 0.62 * 800
    assert page.evaluate("(t => t.scrollHeight > t.clientHeight)(document.getElementById('timeline'))")


def test_live_says_so_only_while_the_run_runs(open_page: Callable[..., Opened]) -> None:
    """A served page follows its trace; "live" shows while a step of the run has not ended, and not once
    every step has (the page still follows the trace: a step that starts later shows it live again)."""
    trace = "ef" * 16
    server = LiveServer()
    try:
        server.publish(_tools_run(trace, 3, open_last=True))
        opened = open_page(url=f"http://127.0.0.1:{server.port}/page")
        page = opened.page
        badge = page.locator("#live")
        expect(badge).to_have_text("live")
        expect(badge).to_be_visible()
        expect(badge).to_have_class("on")
        server.publish(_tools_run(trace, 3))  # the run ends
        expect(page.locator("#meta")).not_to_contain_text("so far")
        expect(badge).to_be_hidden()
        assert badge.get_attribute("data-stream") == "open"  # still following
        server.publish(_tools_run(trace, 4, open_last=True))  # the trace goes on
        expect(badge).to_be_visible()
        expect(badge).to_have_text("live")
        assert opened.errors == []
    finally:
        server.close()


def test_the_legend_shows_the_states_the_page_config_gives(
    open_page: Callable[..., Opened], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trace page keeps no list of states: its legend is the config's ``words.tool_states``, in order."""
    pages = to_pages(demo_spans())
    shown = [s for s in WORDS["tool_states"] if s != "PENDING"]  # PENDING shows only when a step is
    opened = open_page(render_html(pages))
    legend = ".legend button"
    assert opened.page.eval_on_selector_all(legend, "bs => bs.map(b => b.dataset.state)") == shown
    # A state word the server adds (here: every state but FAILED, reversed) is what the page shows.
    given = [s for s in reversed(WORDS["tool_states"]) if s != "FAILED"]
    monkeypatch.setitem(WORDS, "tool_states", given)
    page = open_page(render_html(pages)).page
    assert page.eval_on_selector_all(legend, "bs => bs.map(b => b.dataset.state)") == [
        s for s in given if s != "PENDING"
    ]
    completed = pages[0]["counts"]["COMPLETED"]
    assert page.locator(".legend button[data-state='COMPLETED']").inner_text() == f"COMPLETED {completed}"
    assert opened.errors == []


class PageStreamServer:
    """A small local server with the page stream's contract: the page, and a stream that sends what the
    test queues (``event: page`` / ``event: delta``, each with its ``id``), noting each connection's
    ``?version=`` and ``Last-Event-ID``."""

    def __init__(self, doc: dict[str, Any], version: str) -> None:
        self.queue: list[bytes] = []
        self.connections: list[tuple[str | None, str | None]] = []
        self.cond = threading.Condition()
        self.closing = False
        live = LiveOptions(
            stream_url="/unused", data_url="/unused", page_stream_url="/pages", version=version
        )
        self.html = render_html(doc, live=live)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                path, _, query = self.path.partition("?")
                if path == "/page":
                    body = server.html.encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html; charset=utf-8")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if path != "/pages":
                    self.send_error(404)
                    return
                version = dict(p.split("=", 1) for p in query.split("&") if "=" in p).get("version")
                with server.cond:
                    server.connections.append((version, self.headers.get("Last-Event-ID")))
                    mine = len(server.connections)
                    server.cond.notify_all()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()

                # Only the newest connection is sent what is queued (the page closed the others).
                def newest() -> bool:
                    return mine == len(server.connections)

                while True:
                    with server.cond:
                        server.cond.wait_for(
                            lambda: (server.queue and newest()) or server.closing, timeout=0.5
                        )
                        if server.closing:
                            return
                        chunk = server.queue.pop(0) if server.queue and newest() else b": keep-alive\n\n"
                    try:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                    except OSError:
                        return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def send(self, event: str, tag: str, data: Any) -> None:
        with self.cond:
            self.queue.append(f"id: {tag}\nevent: {event}\ndata: {page_json(data)}\n\n".encode())
            self.cond.notify_all()

    def close(self) -> None:
        with self.cond:
            self.closing = True
            self.cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_page_stream_of_a_server_of_ones_own_deltas_then_a_whole_document(
    open_page: Callable[..., Opened],
) -> None:
    """``LiveOptions.page_stream_url``: the page opens the stream with the version it embeds, applies each
    delta, and when one does not apply to what it holds, opens the stream again without a version and
    takes the whole document it is sent."""
    from toolspan.bridge.views import page_delta, to_page

    spans = demo_spans()
    trace = [s for s in spans if s.trace_id == spans[0].trace_id]
    first, second = to_page(trace[:2], live=True), to_page(trace, live=True)
    server = PageStreamServer(first, "a" * 32)
    try:
        opened = open_page(url=f"http://127.0.0.1:{server.port}/page")
        page = opened.page
        expect(page.locator("#timeline .row")).to_have_count(len(first["steps"]))
        server.send("delta", "b" * 32, page_delta(first, second))
        expect(page.locator("#timeline .row")).to_have_count(len(second["steps"]))
        wrong = page_delta(first, second)  # made against a document the page no longer holds
        wrong["changed"] = [{"key": "0" * 16, "set": {"state": "FAILED"}, "unset": []}]
        server.send("delta", "c" * 32, wrong)
        with server.cond:  # the page opens the stream again
            assert server.cond.wait_for(lambda: len(server.connections) == 2, timeout=10)
        server.send("page", "d" * 32, first)
        expect(page.locator("#live")).to_have_attribute("data-pages", "1")
        expect(page.locator("#timeline .row")).to_have_count(len(first["steps"]))  # the document it was sent
        assert server.connections == [("a" * 32, None), (None, None)]  # its version, then none
        assert page.locator("#live").get_attribute("data-deltas") == "1"
        assert opened.errors == []
    finally:
        server.close()
