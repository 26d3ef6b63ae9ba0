"""The trace page and the trace list served by a real ``toolspan serve``: routes, escaping, the live data,
and, in real headless Chromium, a running tool that appears as RUNNING and turns COMPLETED while watched."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from playwright.sync_api import Browser, expect

import toolspan
from tests.support import bridge_data as bd
from tests.support.bridge_data import scenario
from tests.support.formats import otlp_proto_request
from tests.support.paths import APPS
from tests.support.server import Server, otlp_body, running_server, sdk_env, sse_stream, wait_for
from toolspan.bridge.model import Span
from toolspan.bridge.readers import read_spans
from toolspan.bridge.views import page_delta, to_pages
from toolspan.page import page_json
from toolspan.testing import capture_spans

pytestmark = pytest.mark.processes

APP = APPS / "server_live_app.py"
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


WATCH = """
window.__pwnCalls = 0;
window.__pwn = () => { window.__pwnCalls += 1; };
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__cspViolations.push(e.violatedDirective));
"""


def _page(browser: Browser, url: str, **context: Any) -> tuple[Any, Any, list[str]]:
    """``(context, page, problems)``: ``url`` opened and ready; problems: console and page errors."""
    ctx = browser.new_context(**context)
    page = ctx.new_page()
    page.add_init_script(WATCH)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']")
    return ctx, page, problems


def test_the_list_page_holds_no_data_and_shows_every_name_as_text(tmp_path: Path, browser: Browser) -> None:
    spans = _run()
    trace_id = format(spans[0].context.trace_id, "032x")
    with running_server(tmp_path) as server:
        assert server.post_otlp(otlp_body(spans))[0] == 200
        status, headers, text = _html(server, "/traces")
        ctx, page, problems = _page(
            browser, f"{server.url}/traces?q=" + urllib.parse.quote('"><img src=x onerror=__pwn()>')
        )
        try:
            expect(page.locator("#q")).to_have_value('"><img src=x onerror=__pwn()>')
            page.fill("#q", "")
            page.click("form.toolbar button")
            row = page.locator("#rows tr")
            expect(row).to_have_count(1)
            expect(row.locator("a.name")).to_have_text("weather?")  # the run's name: what was asked
            expect(row.locator(".under")).to_contain_text(f"invoke_agent {HOSTILE}")  # as text
            assert row.locator("a.name").get_attribute("href") == f"/traces/{trace_id}"
            expect(row.locator(".badge")).to_have_text("Completed")
            assert page.evaluate("[window.__pwnCalls, window.__cspViolations]") == [0, []]
            assert page.evaluate("document.querySelectorAll('img').length") == 1  # the logo, nothing else
        finally:
            ctx.close()
    assert status == 200
    assert headers["content-type"].startswith("text/html")
    assert trace_id not in text  # no data in the page itself: it reads /api/traces
    assert re.search(r"script-src 'sha256-[^']+' 'sha256-[^']+'; style-src 'sha256-", text)
    assert "connect-src 'self'" in text
    assert problems == []


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


def test_a_browser_without_the_token_gets_a_page_that_asks_for_it(tmp_path: Path, browser: Browser) -> None:
    """The address the banner prints, opened without the token: a page asking for it (never raw JSON); the
    token given there is kept in the tab only (session storage: no cookie, no URL) and reads every page; a
    wrong one is asked for again. A token in the URL moves out of the address bar. The trace page alike."""
    spans = _run()
    trace_id = format(spans[0].context.trace_id, "032x")
    with running_server(tmp_path, "--token", "s3cret") as server:
        server.headers["Authorization"] = "Bearer s3cret"
        assert server.post_otlp(otlp_body(spans))[0] == 200
        server.headers.clear()
        assert server.request("GET", "/api/traces")[0] == 401  # the API still wants it
        shell = _html(server, f"/traces/{trace_id}")
        assert shell[0] == 200
        assert "weather?" not in shell[2]  # a page without its data
        ctx, page, _ = _page(browser, f"{server.url}/traces")
        try:
            expect(page.locator("#token-page h1")).to_have_text("This toolspan serve needs its token")
            expect(page.locator("#token-problem")).to_have_count(0)
            page.fill("#token", "wrong")
            page.click("#token-go")
            expect(page.locator("#token-problem")).to_have_text(  # asked again, saying why
                "The server did not take that token: check it and paste it again."
            )
            page.fill("#token", "s3cret")
            page.click("#token-go")
            expect(page.locator("#rows tr")).to_have_count(1)
            assert page.evaluate("sessionStorage.getItem('toolspan-token')") == "s3cret"
            assert ctx.cookies() == []
            page.locator("#rows a.name").click()
            page.wait_for_selector("#timeline .row")
            assert page.url == f"{server.url}/traces/{trace_id}"  # no token in the address bar
            expect(page.locator("#title")).to_have_text("weather?")
            page.wait_for_selector("#live[data-stream='open']", state="attached")  # it follows the run...
            expect(page.locator("#live")).to_be_hidden()  # ...which ended: not said to be live
        finally:
            ctx.close()
        # Opened elsewhere with the token in the URL: it moves to the tab's storage, off the address bar.
        ctx, page, _ = _page(browser, f"{server.url}/traces/{trace_id}#access_token=s3cret")
        try:
            page.wait_for_selector("#timeline .row")
            assert page.url == f"{server.url}/traces/{trace_id}"
            assert page.evaluate("sessionStorage.getItem('toolspan-token')") == "s3cret"
        finally:
            ctx.close()
        # The trace page opened directly without it asks for it, then shows the run.
        ctx, page, _ = _page(browser, f"{server.url}/traces/{trace_id}")
        try:
            page.fill("#token", "s3cret")
            page.click("#token-go")
            expect(page.locator("#title")).to_have_text("weather?")
            expect(page.locator("#timeline .row")).to_have_count(2)
        finally:
            ctx.close()


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


# --- a newcomer's first look: /, the list's names, search, state filter and refresh --------------------


def _two_runs() -> list[ReadableSpan]:
    """Two runs of one conversation: a completed one, and one whose second call the approver denied."""

    @toolspan.tool
    def get_weather(city: str) -> dict[str, Any]:
        return {"city": city, "temp_c": 18}

    @toolspan.tool
    def delete_files(pattern: str) -> str:
        return "deleted"

    calls = [
        {"type": "tool_use", "id": "toolu_w", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_d", "name": "delete_files", "input": {"pattern": "*"}},
    ]
    with capture_spans() as finished:
        with toolspan.agent("assistant", input="Weather in Paris?", conversation_id="conv-first-hour"):
            toolspan.run_tool_calls(calls[:1], [get_weather])
        with toolspan.agent(
            "assistant", input="Now clean up the scratch files.", conversation_id="conv-first-hour"
        ):
            toolspan.run_tool_calls(
                calls, [get_weather, delete_files], approve=lambda c: c.name != "delete_files"
            )
        return list(finished())


def _trace_of(spans: list[ReadableSpan], agent_input: str) -> str:
    for span in spans:
        if span.parent is None and span.attributes and agent_input in str(span.attributes.get("input.value")):
            return format(span.context.trace_id, "032x")
    raise AssertionError(agent_input)


def test_root_leads_to_the_trace_list_and_the_banner_names_it(tmp_path: Path) -> None:
    import http.client

    with running_server(tmp_path) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("GET", "/?access_token=t")
        response = conn.getresponse()
        status, location = response.status, response.getheader("location")
        conn.close()
        assert server.request("GET", "/")[0] == 200  # followed: the list itself
    assert (status, location) == (307, "/traces?access_token=t")
    banner = (tmp_path / "server.log").read_text("utf-8").splitlines()
    assert (
        banner[0] == f"toolspan serve: trace list {server.url}/traces (open it in a browser; / leads there)"
    )
    assert f"OTLP/HTTP {server.url}/v1/traces, OTLP/gRPC 127.0.0.1:{server.grpc_port}" in banner[2]


def test_the_all_traces_stream_says_it_starts_at_the_live_tail(tmp_path: Path) -> None:
    with running_server(tmp_path) as server:
        live = sse_stream(server, "/api/stream", comments=True)
        first, second = next(live), next(live)
        live.close()
        everything = sse_stream(server, "/api/stream?from=start", comments=True, timeout=5)
        start = [next(everything).data]
        everything.close()
    assert (first.data, second.event) == ("connected", "comment")
    assert second.data == "live tail: events from now on; ?from=start for every event kept"
    assert start == ["connected"]  # from the start: no such note (the next comment is a heartbeat)


def test_trace_list_names_runs_counts_denials_and_filters(tmp_path: Path) -> None:
    spans = _two_runs()
    done, denied = _trace_of(spans, "Weather in Paris?"), _trace_of(spans, "Now clean up")
    with running_server(tmp_path) as server:
        assert server.post_otlp(otlp_body(spans))[0] == 200
        listing = {r["trace_id"]: r for r in server.get_json("/api/traces")["traces"]}
        page = server.get_json(f"/api/traces/{denied}/page")
        only_denied = [r["trace_id"] for r in server.get_json("/api/traces?state=DENIED")["traces"]]
        searched = [r["trace_id"] for r in server.get_json("/api/traces?q=paris")["traces"]]
        bad_state = server.request("GET", "/api/traces?state=LOST")
    # The same run is DENIED everywhere: the JSON listing and the trace page's counts; one name.
    assert (listing[denied]["state"], listing[denied]["errors"], listing[denied]["denied"]) == (
        "DENIED",
        0,
        1,
    )
    assert (listing[done]["state"], listing[done]["denied"]) == ("COMPLETED", 0)
    assert page["counts"]["DENIED"] == 1
    assert not page["counts"].get("FAILED")
    assert listing[denied]["name"] == page["title"] == "Now clean up the scratch files."
    assert only_denied == [denied]
    assert searched == [done]
    assert bad_state[0] == 400
    assert "DENIED" in json.loads(bad_state[2])["error"]


def test_trace_list_in_chromium_searches_filters_and_follows_new_runs(
    tmp_path: Path, browser: Browser
) -> None:
    spans = _two_runs()
    done, denied = _trace_of(spans, "Weather in Paris?"), _trace_of(spans, "Now clean up")
    later = _run()  # posted after the page was opened: it appears on its own
    with running_server(tmp_path) as server:
        assert server.post_otlp(otlp_body(spans))[0] == 200
        ctx, page, problems = _page(browser, f"{server.url}/")  # the server's address leads to the list
        try:
            assert page.url == f"{server.url}/traces"
            expect(page.locator("#rows tr")).to_have_count(2)
            expect(page.locator("#rows a.name").first).to_have_text("Now clean up the scratch files.")
            expect(page.locator(f"#rows tr[data-trace='{denied}'] .pill")).to_have_text("1 denied")
            expect(page.locator("#summary")).to_contain_text("2 runs")

            page.get_by_label("Search runs").fill("paris")
            page.get_by_role("button", name="Search").click()
            expect(page.locator("#rows tr")).to_have_count(1)
            expect(page.locator("#rows a.name")).to_have_text("Weather in Paris?")
            assert f"/traces/{done}" == page.locator("#rows a.name").get_attribute("href")
            assert "q=paris" in page.url

            page.get_by_label("Search runs").fill("")
            page.get_by_role("button", name="Search").click()
            # Both runs again before the filter: else the search's one row could pass for the filter's.
            expect(page.locator("#rows tr")).to_have_count(2)
            page.locator("#states button[data-state='DENIED']").click()
            expect(page.locator("#rows tr")).to_have_count(1)
            expect(page.locator("#rows .badge")).to_have_text("Denied")
            assert "state=DENIED" in page.url
            page.locator("#states button[data-state='']").click()
            expect(page.locator("#rows tr")).to_have_count(2)

            page.wait_for_selector("#top-live.on")
            assert server.post_otlp(otlp_body(later))[0] == 200
            expect(page.locator("#rows tr")).to_have_count(3, timeout=10_000)  # live: no reload

            page.locator("#rows a.name", has_text="Now clean up").click()
            page.wait_for_selector("body[data-ready='1']")
            assert page.url == f"{server.url}/traces/{denied}"
            page.locator("#nav-traces").click()  # the way back to the list
            page.wait_for_selector("#rows tr")
            assert page.url == f"{server.url}/traces"
            page.locator("#nav-inbox").click()  # the bar's links, from the page's config
            expect(page.locator("#empty h2")).to_have_text("No call waits for a decision")
            assert page.url == f"{server.url}/inbox"
            assert problems == []
        finally:
            ctx.close()


def test_hostile_list_parameters_are_a_page_or_a_400_never_a_500(tmp_path: Path) -> None:
    """Any search text, state or refresh value (control characters, surrogates as URL escapes, SQL and
    LIKE syntax, very long): the JSON listing and the list page answer 200 or a 400 with a reason."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    with running_server(tmp_path) as server:
        assert server.post_otlp(otlp_body(_two_runs()))[0] == 200
        texts = st.one_of(
            st.text(max_size=300),
            st.sampled_from(
                ["%", "_", "\\\\", "'; DROP TABLE traces; --", "\\x00", "%ED%A0%80", "DENIED", "x" * 5000]
            ),
        )

        @settings(
            max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
        )
        @given(q=texts, state=texts, refresh=texts)
        def probe(q: str, state: str, refresh: str) -> None:
            query = urllib.parse.urlencode(
                {"q": q, "state": state, "refresh": refresh}, quote_via=urllib.parse.quote
            )
            for path in (
                f"/traces?{query}",
                f"/api/traces?{urllib.parse.urlencode({'q': q, 'state': state})}",
            ):
                status, _, body = server.request("GET", path)
                assert status in (200, 400), (path, status, body[:200])
                if status == 400:
                    assert json.loads(body)["error"]

        probe()
        for raw in ("%ED%A0%80", "%FF%FE", "%00", "%C0%AF"):  # a lone surrogate, bytes that are no UTF-8
            for path in (f"/traces?q={raw}", f"/api/traces?q={raw}", f"/traces?refresh={raw}"):
                assert server.request("GET", path)[0] in (200, 400), path


# --- states and names the list shares with the trace page ---------------------------------------------


def _stopped_runs() -> list[ReadableSpan]:
    """A run whose tool was cancelled on request, and one stopped by Ctrl-C inside its tool."""
    from toolspan.errors import ToolCancelled

    @toolspan.tool
    def watch(seconds: int) -> str:
        raise ToolCancelled("enough", by="ops")

    @toolspan.tool
    def copy(path: str) -> str:
        raise KeyboardInterrupt

    with capture_spans() as finished:
        with toolspan.agent("assistant", input="Watch the deploy.", new_trace=True):
            toolspan.run_tool_calls(
                [{"type": "tool_use", "id": "t1", "name": "watch", "input": {"seconds": 9}}], [watch]
            )
        try:
            with toolspan.agent("assistant", input="Copy the logs.", new_trace=True):
                copy("/var/log")
        except KeyboardInterrupt:
            pass
        return list(finished())


def test_a_cancelled_run_is_cancelled_in_the_list_and_on_its_page(tmp_path: Path) -> None:
    spans = _stopped_runs()
    on_request, by_ctrl_c = _trace_of(spans, "Watch the deploy."), _trace_of(spans, "Copy the logs.")
    with running_server(tmp_path) as server:
        assert server.post_otlp(otlp_body(spans))[0] == 200
        rows = {r["trace_id"]: r for r in server.get_json("/api/traces")["traces"]}
        pages = {t: server.get_json(f"/api/traces/{t}/page") for t in rows}
        only = {r["trace_id"] for r in server.get_json("/api/traces?state=CANCELLED")["traces"]}
        failed = server.get_json("/api/traces?state=FAILED")["traces"]
    for trace_id in (on_request, by_ctrl_c):
        row = rows[trace_id]
        assert (row["state"], row["errors"], row["cancelled"]) == ("CANCELLED", 0, 1), row
        counts = pages[trace_id]["counts"]
        assert counts.get("CANCELLED"), counts  # the page agrees: cancelled, no failure
        assert not counts.get("FAILED"), counts
        assert row["name"] == pages[trace_id]["title"]  # one name for the run, everywhere
    assert only == {on_request, by_ctrl_c}
    assert failed == []


@contextlib.contextmanager
def _waiting_run(server: Server, pending: bool = True, whole: bool = False) -> Iterator[threading.Event]:
    """A run of agent ``treasurer`` (service ``payments``) whose ``transfer`` call waits for an approval
    (until the event yielded is set), its spans sent to ``server``, with pending records of its tools
    (``whole``: of every span, the agent's too)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from toolspan.exporters.pending import PendingSpanProcessor
    from toolspan.testing import installed_tracer_provider

    @toolspan.tool
    def transfer(amount: int) -> str:
        return "sent"

    decided = threading.Event()
    exporter = OTLPSpanExporter(endpoint=f"{server.url}/v1/traces")
    provider = TracerProvider(resource=Resource.create({"service.name": "payments"}))
    if pending:
        provider.add_span_processor(PendingSpanProcessor(exporter, tools_only=not whole))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    call = {"type": "tool_use", "id": "toolu_pay", "name": "transfer", "input": {"amount": 20}}

    def run() -> None:
        with toolspan.agent("treasurer", input="Pay the invoice."):
            toolspan.run_tool_calls([call], [transfer], approve=lambda c: decided.wait(30))

    with installed_tracer_provider(provider):
        worker = threading.Thread(target=run)
        worker.start()
        try:
            yield decided
        finally:
            decided.set()
            worker.join(30)
    provider.shutdown()


def test_a_run_waiting_for_approval_is_listed_as_such_and_named_from_its_first_record(tmp_path: Path) -> None:
    """Only the waiting tool's pending record has arrived (the agent's span arrives when it ends): the run is
    AWAITING_APPROVAL (and filtered so), named by the agent its approval request names, on the list and its
    page alike; when it ends it is named by what the user asked."""
    with running_server(tmp_path) as server:
        with _waiting_run(server):
            (row,) = wait_for(lambda: server.get_json("/api/traces")["traces"], "the waiting run")
            waiting = server.get_json("/api/traces?state=AWAITING_APPROVAL")["traces"]
            running = server.get_json("/api/traces?state=RUNNING")["traces"]
            page = server.get_json(f"/api/traces/{row['trace_id']}/page")
        (done,) = wait_for(lambda: server.get_json("/api/traces?state=COMPLETED")["traces"], "the ended run")
    assert (row["state"], row["waiting"], row["name"], row["root_name"]) == (
        "AWAITING_APPROVAL",
        1,
        "treasurer",
        None,
    )
    assert [r["trace_id"] for r in waiting] == [row["trace_id"]]
    assert running == []
    assert page["title"] == "treasurer"
    assert (done["name"], done["waiting"]) == ("Pay the invoice.", 0)


def test_the_inbox_and_the_trace_page_of_a_waiting_call(tmp_path: Path, browser: Browser) -> None:
    """The inbox lists the waiting call (tool, arguments, its run named and linked, agent, service, how long
    it waits) and the bar counts it; the trace page opened on the call's first record makes sense: named, the
    waiting call named above the timeline and selected, its missing parent said to be on its way, the
    time it has waited so far; and says nothing of an orphan."""
    with running_server(tmp_path) as server, _waiting_run(server):
        entry = wait_for(lambda: server.get_json("/api/control/waiting")["waiting"], "the call")[0]
        ctx, page, problems = _page(browser, f"{server.url}/inbox", viewport={"width": 1280, "height": 800})
        try:
            card = page.locator(".card")
            expect(card).to_have_count(1)
            expect(card.locator("h2.tool")).to_have_text("transfer")
            assert json.loads(card.locator("pre.args").inner_text()) == {"amount": 20}
            expect(card.locator(".meta")).to_contain_text("agent treasurer")
            expect(card.locator(".meta")).to_contain_text("service payments")
            expect(card.locator(".since")).to_contain_text("waiting ")
            expect(page.locator("#inbox-count")).to_have_text("1")
            # The run is named as the list names it: only the call's record is here, so by its agent.
            expect(card.locator(".meta .run")).to_have_text("run treasurer")
            card.locator(".meta .run a").click()
            page.wait_for_selector("body[data-ready='1']")
            assert page.url == f"{server.url}/traces/{entry['trace_id']}#{entry['execution_id']}"
            expect(page.locator("#title")).to_have_text("treasurer")
            expect(page.locator("#notice")).to_have_text("1 call waits for approval: transfer")
            expect(page.locator("#detail .badge")).to_have_text("AWAITING_APPROVAL")
            expect(page.locator("#meta")).to_contain_text("so far")
            expect(page.locator("#meta")).to_contain_text(" 1 step ")
            detail = page.locator("#detail").inner_text()
            assert "not here yet" in detail
            assert "orphan" not in detail
            expect(
                page.locator("#conversation-panel")
            ).to_be_hidden()  # nothing to show yet: not an empty box
            # Opened without naming the call, the page selects it.
            page.goto(f"{server.url}/traces/{entry['trace_id']}")
            page.wait_for_selector("body[data-ready='1']")
            expect(page.locator("#detail .badge")).to_have_text("AWAITING_APPROVAL")
            assert problems == []
        finally:
            ctx.close()


def test_an_inbox_card_names_its_run_as_the_list_does(tmp_path: Path, browser: Browser) -> None:
    """A run sent whole while it runs (``TOOLSPAN_PENDING_SPANS=all``): the card of its waiting call names
    the run by what the user asked, as the list of runs does, linked to the run's page on that call, and
    names its agent."""
    with running_server(tmp_path) as server, _waiting_run(server, whole=True):
        entry = wait_for(lambda: server.get_json("/api/control/waiting")["waiting"], "the call")[0]
        (row,) = wait_for(lambda: server.get_json("/api/traces")["traces"], "the run")
        assert row["name"] == entry["run"] == "Pay the invoice."
        ctx, page, problems = _page(browser, f"{server.url}/inbox", viewport={"width": 1280, "height": 800})
        try:
            card = page.locator(".card")
            expect(card.locator(".meta .run")).to_have_text("run Pay the invoice.")
            expect(card.locator(".meta")).to_contain_text("agent treasurer")
            link = card.locator(".meta .run a")
            expect(link).to_be_visible()
            link.click()
            page.wait_for_selector("body[data-ready='1']")
            assert page.url == f"{server.url}/traces/{entry['trace_id']}#{entry['execution_id']}"
            expect(page.locator("#title")).to_have_text("Pay the invoice.")
            assert problems == []
        finally:
            ctx.close()


def test_the_bar_counts_the_waiting_calls_as_the_inbox_fills_and_empties(
    tmp_path: Path, browser: Browser
) -> None:
    """The count of waiting calls in the bar across the top follows the server on every page, without a
    reload: the inbox's (drawn from the same read as its cards), the list's and the run's page show 1
    while the call waits, and no count once it went on."""
    with running_server(tmp_path) as server:
        ctx, inbox, problems = _page(browser, f"{server.url}/inbox")
        try:
            count = inbox.locator("#inbox-count")
            expect(count).to_be_hidden()
            with _waiting_run(server) as decided:
                entry = wait_for(lambda: server.get_json("/api/control/waiting")["waiting"], "the call")[0]
                expect(inbox.locator(".card")).to_have_count(1)
                assert count.inner_text() == "1"  # drawn with the card, from the same read
                runs = ctx.new_page()
                runs.goto(f"{server.url}/traces")
                run = ctx.new_page()
                run.goto(f"{server.url}/traces/{entry['trace_id']}")
                for other in (runs, run):
                    other.wait_for_selector("body[data-ready='1']")
                    expect(other.locator("#inbox-count")).to_have_text("1")
                decided.set()  # the call is allowed: it runs, and leaves the inbox
                expect(inbox.locator("#empty")).to_be_visible()
                assert count.is_hidden()  # the inbox that shows none counts none
                for shown in (runs, run):
                    expect(shown.locator("#inbox-count")).to_be_hidden(timeout=15_000)
            assert problems == []
        finally:
            ctx.close()


def test_an_empty_inbox_says_what_brings_a_call_there(tmp_path: Path, browser: Browser) -> None:
    with running_server(tmp_path) as server:
        ctx, page, problems = _page(browser, f"{server.url}/inbox")
        try:
            expect(page.locator("#empty")).to_contain_text("No call waits for a decision")
            expect(page.locator("#empty")).to_contain_text("TOOLSPAN_PENDING_SPANS=true")
            expect(page.locator("#inbox-count")).to_be_hidden()
            assert problems == []
        finally:
            ctx.close()


def test_the_list_and_the_inbox_fit_a_phone_and_follow_the_dark_scheme(
    tmp_path: Path, browser: Browser
) -> None:
    """At phone width nothing runs off the side (the list's rows become cards) and every run stays one tap
    away; in the dark scheme the pages are dark, with their state colours still told apart."""
    finished = _two_runs()  # (recorded before the waiting run installs its provider)
    with running_server(tmp_path) as server, _waiting_run(server):
        assert server.post_otlp(otlp_body(finished))[0] == 200
        wait_for(lambda: server.get_json("/api/control/waiting")["waiting"], "the waiting call")
        for scheme in ("light", "dark"):
            phone = {"viewport": {"width": 390, "height": 844}, "color_scheme": scheme}
            ctx, page, problems = _page(browser, f"{server.url}/traces", **phone)
            try:
                expect(page.locator("#rows tr")).to_have_count(3)
                widths = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
                assert widths[0] <= widths[1], widths
                assert (
                    page.evaluate("getComputedStyle(document.querySelector('#runs thead')).display") == "none"
                )
                boxes = page.eval_on_selector_all(
                    "#rows tr", "rows => rows.map(r => r.getBoundingClientRect().width)"
                )
                assert all(width <= 390 for width in boxes)
                background = page.evaluate("getComputedStyle(document.body).backgroundColor")
                badges = page.eval_on_selector_all(
                    "#rows .badge", "bs => bs.map(b => getComputedStyle(b).backgroundColor)"
                )
                assert len(set(badges)) == 3  # awaiting approval, denied, completed: three colours
                page.goto(f"{server.url}/inbox")
                page.wait_for_selector(".card")
                widths = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
                assert widths[0] <= widths[1], widths
                assert problems == []
            finally:
                ctx.close()
            assert background == ("rgb(255, 255, 255)" if scheme == "light" else "rgb(13, 17, 23)")


def _records(spans: list[Span]) -> list[Span]:
    """The records of a run as an application with pending records exports them: each span's pending
    record when it starts, its ended record when it ends."""
    timed = [(s.start_ns, 0, dataclasses.replace(s, end_ns=None)) for s in spans]
    timed += [(s.end_ns, 1, s) for s in spans if s.end_ns is not None]
    return [record for _, _, record in sorted(timed, key=lambda t: (t[0], t[1]))]


_ROWS = """() => [...document.querySelectorAll('#timeline .row, #tree .row')].map((r) => [
  r.closest('#tree') ? 'tree' : 'timeline', r.className.replace(/ ?\\bsel\\b/, ''), r.title,
  r.textContent])"""


def test_the_live_page_applies_what_its_stream_sends_and_reads_its_data_once(
    tmp_path: Path, browser: Browser
) -> None:
    """A run exported record by record (each span's pending record when it starts, its end when it ends)
    while its page is open: the page applies each delta its page stream sends, keeps the step selected, and
    ends with the rows and states of a fresh load of the finished trace, having read ``/page`` once."""
    spans = [s for s in scenario() if s.trace_id == scenario()[0].trace_id]
    records = _records(spans)
    trace_id = spans[0].trace_id
    with running_server(tmp_path, "--token", "s3cret") as server:
        server.headers["Authorization"] = "Bearer s3cret"

        def export(record: Span) -> None:
            assert server.post_otlp(bytes(otlp_proto_request([record]).SerializeToString()))[0] == 200

        export(records[0])
        ctx = browser.new_context()
        page = ctx.new_page()
        fetched: list[str] = []  # every request the page makes, counted from before it loads
        page.on("request", lambda r: fetched.append(urllib.parse.urlsplit(r.url).path))
        problems: list[str] = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        try:
            page.goto(f"{server.url}/traces/{trace_id}#access_token=s3cret")
            page.wait_for_selector("#live[data-stream='open']", state="attached")
            page.locator("#timeline .row").first.click()
            chosen = page.evaluate("window.toolspanPage.selected()")
            for record in records[1:]:
                export(record)
            fresh_ctx, fresh, _ = _page(browser, f"{server.url}/traces/{trace_id}#access_token=s3cret")
            try:
                fresh.wait_for_selector("#timeline .row")
                fresh.evaluate("window.toolspanPage.expandAll()")
                want = fresh.evaluate(_ROWS)
            finally:
                fresh_ctx.close()
            assert len([r for r in want if r[0] == "timeline"]) == len(spans)
            page.evaluate("window.toolspanPage.expandAll()")
            wait_for(lambda: page.evaluate(_ROWS) == want, "the live page's rows to be the finished trace's")
            assert page.evaluate("window.toolspanPage.selected()") == chosen  # the selection stayed
            badge = page.locator("#live")
            assert badge.get_attribute("data-pages") is None  # no whole document from its stream...
            assert int(badge.get_attribute("data-deltas") or "0") >= 1  # ...only deltas, applied
            # Its data read once, at the start (served without it: asked for without the token); since then
            # only its stream.
            assert fetched.count(f"/api/traces/{trace_id}/page") == 1
            assert fetched.count(f"/api/traces/{trace_id}/page/stream") == 1
            assert problems == []
        finally:
            ctx.close()


def test_a_delta_keeps_the_collapsed_steps_and_the_details_of_an_untouched_step(
    tmp_path: Path, browser: Browser
) -> None:
    """A step arriving before the others (every index moves) and a call ending: the step collapsed in the
    tree stays collapsed, and the details of the selected step, which the delta does not touch, are left as
    drawn (the same elements: what the reader unfolded stays)."""
    plan_attrs = {"openinference.span.kind": "CHAIN", "toolspan.plan.name": "the plan"}
    root = bd.span(1, None, "invoke_agent a", 0, None, bd.agent_attrs("a", "go", None))
    done = bd.span(2, 1, "execute_tool lookup", 20, 25, bd.tool_attrs(2, "lookup", {"q": 1}, 1))
    plan = bd.span(3, 1, "plan", 30, None, plan_attrs)
    inner = bd.span(4, 3, "execute_tool fetch", 31, None, bd.tool_attrs(4, "fetch", {"u": 1}))
    early = bd.span(5, 1, "execute_tool first", 10, 12, bd.tool_attrs(5, "first", {"n": 0}, 0))
    inner_done = dataclasses.replace(inner, end_ns=bd.T0 + 40 * bd.MS)
    before = to_pages([root, done, plan, inner], live=True)[0]
    after = to_pages([root, done, plan, inner_done, early], live=True)[0]
    assert bd.sid(2) not in {c["key"] for c in page_delta(before, after)["changed"]}  # the selected one
    with running_server(tmp_path) as server:
        for record in (root, done, plan, inner):
            assert server.post_otlp(bytes(otlp_proto_request([record]).SerializeToString()))[0] == 200
        ctx, page, problems = _page(browser, f"{server.url}/traces/{root.trace_id}")
        try:
            page.wait_for_selector("#live[data-stream='open']", state="attached")
            page.evaluate(f"window.toolspanPage.goTo({bd.sid(2)!r})")
            page.locator("#detail h3").evaluate("(h) => { h.dataset.drawn = 'before'; }")
            page.locator("#tree .row", has_text="the plan").locator("[data-twist]").click()
            expect(page.locator("#tree .row", has_text="fetch")).to_have_count(0)
            body = otlp_proto_request([early, inner_done]).SerializeToString()
            assert server.post_otlp(bytes(body))[0] == 200
            expect(page.locator("#tree .row", has_text="first")).to_have_count(1)  # the delta, applied
            assert page.locator("#live").get_attribute("data-pages") is None
            plan_row = page.locator("#tree .row", has_text="the plan")
            expect(plan_row).to_have_attribute("aria-expanded", "false")  # still collapsed, one index on
            expect(page.locator("#tree .row", has_text="fetch")).to_have_count(0)
            assert page.evaluate("window.toolspanPage.selected()") == bd.sid(2)
            assert page.locator("#detail h3").get_attribute("data-drawn") == "before"
            assert problems == []
        finally:
            ctx.close()
