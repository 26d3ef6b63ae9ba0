"""Tool calls in the real Jaeger UI (v1.75.0, built from its source release and served by the real Jaeger
v2.12.0), driven in headless Chromium as a person uses it.

A run of decorated tools (``shipping_app.py run``: an agent, a tool with the model's call id, a sub-plan
under the tool that started it, a failing tool) goes through the real Collector (``collector-config/
jaeger.yaml``) to Jaeger. Then, in Jaeger's own pages: the search finds the run by its service, by each
tool's operation ``execute_tool <name>``, and by a tag search on the model's call id or on the execution id;
the trace view shows each tool under its agent, the sub-plan under the tool that started it, a failed call
marked as an error, and a tool's arguments and result among its tags.

``TOOLSPAN_RECORD_SCREENSHOTS=1`` also writes the search and the trace view into ``docs/`` (the pictures
``docs/shipping.md`` shows).
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.otel_stack import CONFIG_DIR, Collector, Jaeger, app_env
from tests.e2e.test_collector_jaeger import RUN_SPANS, run_app
from tests.support.paths import REPO
from toolspan import semconv

pytestmark = [pytest.mark.e2e, pytest.mark.processes]

SERVICE = "toolspan-jaeger-ui"
CALL_ID = "toolu_ship_search_1"  # the model's id shipping_app.py gives its search call
TOOLS = ("search", "research", "fetch", "read_file", "divide")
RECORD = os.environ.get("TOOLSPAN_RECORD_SCREENSHOTS") == "1"


@dataclass(frozen=True)
class Shipped:
    trace_id: str
    search_execution_id: str  # the execution id of the search call (from its span id)


@pytest.fixture(scope="module")
def shipped(
    go_programs: tuple[Path, Path], jaeger: Jaeger, tmp_path_factory: pytest.TempPathFactory
) -> Shipped:
    work = tmp_path_factory.mktemp("jaeger-ui")
    collector = Collector(
        go_programs[0], CONFIG_DIR / "jaeger.yaml", work, {"JAEGER_ENDPOINT": jaeger.otlp_grpc}
    )
    try:
        result = run_app(app_env(collector.endpoint("grpc"), "grpc", OTEL_SERVICE_NAME=SERVICE), "run")
    finally:
        collector.stop()
    trace_id = result["trace_id"]
    jaeger.wait_for_trace(trace_id, RUN_SPANS)
    spans = jaeger.get_json(f"/api/traces/{trace_id}")["data"][0]["spans"]
    search = next(s for s in spans if s["operationName"] == "execute_tool search")
    tags = {t["key"]: t["value"] for t in search["tags"]}
    # The execution id is the span id (with toolspan's prefix).
    assert tags[semconv.TOOLSPAN_EXECUTION_ID] == f"exec_{search['spanID']}"
    return Shipped(trace_id, tags[semconv.TOOLSPAN_EXECUTION_ID])


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        yield context.new_page()
    finally:
        context.close()


def search(page: Page, jaeger: Jaeger, **query: str) -> list[dict[str, Any]]:
    """Open Jaeger's search page for ``query`` (what its form puts in the URL) and read the results it shows:
    each result's title, link and tags (``8 Spans``, ``1 Error``)."""
    params = {"service": SERVICE, "lookback": "1h", "limit": "20", **query}
    page.goto(f"{jaeger.url}/search?{urllib.parse.urlencode(params)}")
    expect(page.locator(".ResultItem").first.or_(page.get_by_text("No trace results"))).to_be_visible()
    return [
        {
            "title": item.locator(".ResultItemTitle--title .TraceName").inner_text().replace("\n", ""),
            "href": item.locator("a.ResultItemTitle--item").get_attribute("href"),
            "tags": item.locator(".ant-tag").all_inner_texts(),
        }
        for item in page.locator(".ResultItem").all()
    ]


def found(results: list[dict[str, Any]], trace_id: str) -> list[str]:
    return [r["title"] for r in results if r["href"] == f"/trace/{trace_id}"]


def test_the_search_finds_the_run_by_its_service_and_by_each_tools_operation(
    shipped: Shipped, jaeger: Jaeger, page: Page, tmp_path: Path
) -> None:
    by_service = search(page, jaeger)
    assert found(by_service, shipped.trace_id) == [f"{SERVICE}: invoke_agent planner"]
    # The service's operations, as Jaeger's operation picker lists them: one per tool, named as the GenAI
    # conventions name a tool call.
    operations = {o["name"] for o in jaeger.get_json("/api/operations", service=SERVICE)["data"]}
    assert {f"execute_tool {tool}" for tool in TOOLS} <= operations
    for tool in TOOLS:
        results = search(page, jaeger, operation=f"execute_tool {tool}")
        assert found(results, shipped.trace_id), tool
    failed = search(page, jaeger, operation="execute_tool divide")
    (item,) = [r for r in failed if r["href"] == f"/trace/{shipped.trace_id}"]
    assert f"{RUN_SPANS} Spans" in item["tags"]
    assert "1 Error" in item["tags"]


def test_a_tag_search_on_the_models_call_id_or_the_execution_id_finds_the_call(
    shipped: Shipped, jaeger: Jaeger, page: Page
) -> None:
    by_call_id = search(page, jaeger, tags=json.dumps({semconv.GEN_AI_TOOL_CALL_ID: CALL_ID}))
    assert [r["href"] for r in by_call_id] == [f"/trace/{shipped.trace_id}"]
    if RECORD:
        page.screenshot(path=str(REPO / "docs" / "jaeger-search.png"))
    by_execution_id = search(
        page, jaeger, tags=json.dumps({semconv.TOOLSPAN_EXECUTION_ID: shipped.search_execution_id})
    )
    assert [r["href"] for r in by_execution_id] == [f"/trace/{shipped.trace_id}"]
    # Only the call searched for: the same tag with another value finds nothing.
    assert search(page, jaeger, tags=json.dumps({semconv.GEN_AI_TOOL_CALL_ID: "toolu_nosuch"})) == []
    expect(page.get_by_text("No trace results")).to_be_visible()


def rows(page: Page) -> list[tuple[int, str, bool]]:
    """The trace view's rows, top to bottom: (depth in the tree, operation, marked as an error)."""
    expect(page.locator(".span-row").first).to_be_visible()
    return [
        (
            row.locator(".SpanTreeOffset--indentGuide").count(),
            row.locator(".endpoint-name").inner_text(),
            row.locator(".SpanBarRow--errorIcon").count() > 0,
        )
        for row in page.locator(".span-row").all()
    ]


def test_the_trace_view_shows_each_tool_under_its_agent_and_the_sub_plan_under_its_tool(
    shipped: Shipped, jaeger: Jaeger, page: Page
) -> None:
    page.goto(f"{jaeger.url}/trace/{shipped.trace_id}")
    shown = rows(page)
    base = shown[0][0]
    assert [(depth - base, name, error) for depth, name, error in shown] == [
        (0, "invoke_agent planner", False),
        (1, "execute_tool search", False),
        (1, "execute_tool research", False),
        (2, "plan deep-dive", False),  # the sub-plan, under the tool that started it
        (3, "invoke_agent reader", False),
        (4, "execute_tool fetch", False),
        (1, "execute_tool read_file", False),
        (1, "execute_tool divide", True),  # the failed call, marked as an error
    ]
    expect(page.locator(".TracePageHeader").get_by_text(f"{SERVICE}: invoke_agent planner")).to_be_visible()


def open_tags(page: Page, operation: str) -> dict[str, str]:
    """Click the row of ``operation`` and read its Tags as Jaeger's detail lists them, each value as the span
    holds it (key -> value); then open the Tags table (how a person reads them)."""
    page.locator(".span-row", has_text=operation).locator("a.span-name").click()
    detail = page.locator(".detail-row").filter(has=page.get_by_role("heading", name=operation))
    header = detail.locator(".AccordianKeyValues--header", has_text="Tags")
    expect(header).to_be_visible()
    tags = {}
    for item in header.locator(".AccordianKeyValues--summaryItem").all():
        key = item.locator(".AccordianKeyValues--summaryLabel").inner_text()
        tags[key] = item.inner_text().removeprefix(key).strip().removeprefix("=").strip()
    header.click()
    expect(detail.locator(".KeyValueTable").first).to_be_visible()
    return tags


def test_a_tools_tags_hold_its_arguments_and_result_and_a_failed_call_its_error(
    shipped: Shipped, jaeger: Jaeger, page: Page
) -> None:
    page.goto(f"{jaeger.url}/trace/{shipped.trace_id}")
    expect(page.locator(".span-row").first).to_be_visible()
    tags = open_tags(page, "execute_tool search")
    assert json.loads(tags[semconv.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"query": "opentelemetry", "limit": 2}
    assert json.loads(tags[semconv.GEN_AI_TOOL_CALL_RESULT]) == [
        "opentelemetry result 0",
        "opentelemetry result 1",
    ]
    assert tags[semconv.GEN_AI_TOOL_CALL_ID] == CALL_ID
    assert tags[semconv.TOOLSPAN_EXECUTION_ID] == shipped.search_execution_id
    if RECORD:  # tall enough for every row and the opened call's tags
        page.set_viewport_size({"width": 1400, "height": 1090})
        page.screenshot(path=str(REPO / "docs" / "jaeger-trace.png"))
    failed = open_tags(page, "execute_tool divide")
    assert json.loads(failed[semconv.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"a": 1, "b": 0}
    assert failed["error"] == "true"
    assert failed["error.type"] == "ZeroDivisionError"
    assert failed.get("otel.status_code") == "ERROR"


def test_the_ui_is_jaegers_own_build_not_the_placeholder(jaeger: Jaeger) -> None:
    index = jaeger.get("/").decode()
    assert "<title>Jaeger UI</title>" in index
