"""The trace list page of a real ``toolspan serve --jaeger URL`` in headless Chromium, over the Jaeger
stand-in of ``test_backend_list``: Jaeger's runs are rows that open toolspan's trace page of the run (read
from Jaeger), and where Jaeger cannot list (no service yet) or fails, the page says why in one line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.server.test_backend_list import ANSWERS, EVER, NEWEST_FIRST, PARITY_ID
from tests.support.backend import Backend, backend_server, jaeger_search, json_answer
from tests.support.formats import jaeger_recording
from tests.support.server import running_server

pytestmark = pytest.mark.processes


@pytest.fixture
def jaeger() -> Iterator[Backend]:
    with backend_server() as backend:
        jaeger_search(backend, ANSWERS)
        backend.answers[f"/api/v3/traces/{PARITY_ID}"] = json_answer(
            jaeger_recording("parity", "v3").read_bytes()
        )
        yield backend


def _list(browser: Browser, url: str) -> tuple[Page, list[str]]:
    page = browser.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']")
    return page, problems


def test_jaegers_runs_are_listed_and_open_on_the_trace_page(
    tmp_path: Path, browser: Browser, jaeger: Backend
) -> None:
    with running_server(tmp_path, "--jaeger", jaeger.url) as server:
        page, problems = _list(browser, f"{server.url}/traces{EVER}")
        try:
            rows = page.locator("#rows tr")
            expect(rows).to_have_count(3)
            assert [rows.nth(i).get_attribute("data-trace") for i in range(3)] == NEWEST_FIRST
            expect(page.locator("#problem")).to_be_hidden()
            parity = page.locator(f"#rows tr[data-trace='{PARITY_ID}']")
            expect(parity.locator("a.name")).to_have_text("invoke_agent planner")
            expect(parity.locator(".badge")).to_have_text("Failed")
            parity.locator("a.name").click()
            page.wait_for_url(f"**/traces/{PARITY_ID}")
            page.wait_for_selector("body[data-ready='1']")
            expect(page.locator("#tree .row .label", has_text="search").first).to_be_visible()
            assert problems == []
        finally:
            page.close()
        assert server.counts() == {"spans": 0, "traces": 0}  # listed and shown from Jaeger, held nowhere


def test_the_list_says_in_one_line_why_jaeger_lists_no_run(
    tmp_path: Path, browser: Browser, jaeger: Backend
) -> None:
    jaeger_search(jaeger, {})
    with running_server(tmp_path, "--jaeger", jaeger.url) as server:
        page, _ = _list(browser, f"{server.url}/traces")
        try:
            expect(page.locator("#problem")).to_have_text(
                f"Jaeger at {jaeger.url} knows no service yet: the runs it receives are listed here"
            )
            jaeger.answers["/api/services"] = json_answer(b"forbidden", 403)
            page.reload()
            page.wait_for_selector("body[data-ready='1']")
            problem = page.locator("#problem")
            expect(problem).to_contain_text(
                f"the runs of the trace backend: Jaeger: {jaeger.url}/api/services: HTTP 403"
            )
            assert "\n" not in problem.inner_text()
        finally:
            page.close()
