"""The audit page (``toolspan audit --to html``) in real headless Chromium: violations marked on their
tool nodes in the timeline, the tree and the detail, a list of findings that jumps to each node, a denied
call shown as denied, and a clean run without any mark (helpers shared with ``test_page_browser``, the
browser from ``conftest``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.page import test_browser as test_page_browser
from tests.support.page_data import hostile_payloads
from tests.support.policy_runs import run_spans
from toolspan.bridge.model import Span
from toolspan.bridge.views import audit, mark_pages, to_pages
from toolspan.page import render_html
from toolspan.policy import parse_policy

pytestmark = pytest.mark.processes

Opened = test_page_browser.Opened
open_page = test_page_browser.open_page

POLICY = parse_policy(
    {
        "id": "ci-gate",
        "version": "2026.11",
        "rules": [
            {"id": "no-shell", "kind": "tools", "deny": ["shell"]},
            {"id": "limit", "kind": "arguments", "tool": "transfer", "path": "amount", "max": 100},
        ],
    }
)


def _html(spans: list[Span]) -> str:
    return render_html(mark_pages(to_pages(spans), audit(spans, POLICY)))


def _bad() -> list[Span]:
    return run_spans(
        "assistant",
        [
            ("web_search", {"query": "q"}, None),
            ("shell", {"cmd": "ls"}, None),
            ("transfer", {"amount": 101}, None),
            ("shell", {"cmd": "x"}, False),
        ],
    )


def _texts(opened: Opened, selector: str) -> list[str]:
    texts: list[Any] = opened.page.locator(selector).all_inner_texts()
    return [" ".join(t.split()) for t in texts]


def test_violations_are_marked_listed_and_the_list_jumps_to_each_node(
    open_page: Callable[..., Opened],
) -> None:
    spans = _bad()
    opened = open_page(_html(spans))
    page = opened.page
    expect(page.locator("#audit-panel")).to_be_visible()
    assert _texts(opened, "#audit-h") == [
        "Policy ci-gate version 2026.11: 2 violation(s), 1 denied, 0 unchecked"
    ]
    assert _texts(opened, "#audit-list li") == [
        "violation shell no-shell (tools): tool 'shell' is denied",
        "violation transfer limit (arguments): argument 'amount' is 101, above the maximum 100",
        "denied shell no-shell (tools): tool 'shell' is denied",
    ]
    # The marked rows, in the timeline and in the tree: only the three offending calls, each with its rule.
    for host in ("#timeline", "#tree"):
        assert _texts(opened, f"{host} .row.flagged .pmark") == [
            "\u26a0 no-shell",
            "\u26a0 limit",
            "denied: no-shell",
        ]
        assert _texts(opened, f"{host} .row.flagged .label") == ["shell", "transfer", "shell"]
        assert page.locator(f"{host} .row:not(.flagged) .pmark").count() == 0
    colors = page.eval_on_selector_all(
        "#timeline .row.flagged .pmark", "els => els.map(e => getComputedStyle(e).backgroundColor)"
    )
    assert colors[0] == colors[1] != colors[2]  # a violation and a denial look different
    assert page.eval_on_selector("#timeline .row.flagged", "e => getComputedStyle(e).boxShadow") != "none"
    # Each list entry jumps to its node: selected in the timeline and the tree, its findings in the detail.
    tools = [s for s in spans if s.attributes.get("gen_ai.tool.name") in ("shell", "transfer")]
    tools.sort(key=lambda s: s.start_ns)
    for k, (span, line) in enumerate(
        zip(
            tools,
            [
                "violation no-shell (tools): tool 'shell' is denied \u00b7 policy ci-gate version 2026.11",
                "violation limit (arguments): argument 'amount' is 101, above the maximum 100"
                " \u00b7 policy ci-gate version 2026.11",
                "denied no-shell (tools): tool 'shell' is denied \u00b7 policy ci-gate version 2026.11",
            ],
            strict=True,
        )
    ):
        page.locator("#audit-list li a").nth(k).click()
        assert page.evaluate("window.toolspanPage.selected()") == span.span_id
        assert _texts(opened, "#detail .finding") == [line]
        expect(page.locator("#timeline .row[aria-selected='true'] .pmark")).to_be_visible()
        expect(page.locator("#tree .row[aria-selected='true'] .pmark")).to_be_visible()
        assert page.locator("#detail h3 .badge").inner_text() == ("DENIED" if k == 2 else "COMPLETED")
    # Keyboard: Enter on a list entry jumps too.
    page.locator("#audit-list li a").nth(0).focus()
    page.keyboard.press("Enter")
    assert page.evaluate("window.toolspanPage.selected()") == tools[0].span_id
    # Only the flagged calls in the timeline, and back.
    page.check("#audit-only")
    assert _texts(opened, "#timeline .row .label") == ["shell", "transfer", "shell"]
    expect(page.locator("#count")).to_have_text("3 of 5 steps")
    page.uncheck("#audit-only")
    expect(page.locator("#count")).to_have_text("5 steps")
    # Searching a rule id finds the offending calls.
    page.fill("#search", "limit")
    page.keyboard.press("Enter")
    assert _texts(opened, "#timeline .row .label") == ["transfer"]
    assert (opened.errors, [r for r in opened.requests if not r.startswith("file:")]) == ([], [])
    assert page.evaluate("window.__cspViolations") == []


def test_a_clean_run_shows_the_policy_and_no_marks(open_page: Callable[..., Opened]) -> None:
    spans = run_spans(
        "assistant", [("transfer", {"amount": 100}, None), ("web_search", {"query": "q"}, None)]
    )
    opened = open_page(_html(spans))
    page = opened.page
    expect(page.locator("#audit-panel")).to_be_visible()
    assert _texts(opened, "#audit-h") == [
        "Policy ci-gate version 2026.11: 0 violation(s), 0 denied, 0 unchecked"
    ]
    assert _texts(opened, "#audit-list li") == ["No findings: every tool call keeps to the policy."]
    assert page.locator(".pmark, .row.flagged, #audit-list a").count() == 0
    page.locator("#timeline .row", has_text="transfer").click()
    assert page.locator("#detail .finding").count() == 0
    assert opened.errors == []


def test_a_plain_trace_page_has_no_audit_panel(open_page: Callable[..., Opened]) -> None:
    opened = open_page(render_html(to_pages(_bad())))
    expect(opened.page.locator("#audit-panel")).to_be_hidden()
    assert opened.page.locator(".pmark, .row.flagged").count() == 0


def test_findings_in_several_traces_jump_across_traces(open_page: Callable[..., Opened]) -> None:
    first = run_spans("assistant", [("web_search", {"query": "q"}, None)])
    second = run_spans("assistant", [("transfer", {"amount": 500}, None)])
    opened = open_page(_html(first + second))
    page = opened.page
    assert _texts(opened, "#audit-h") == [
        "Policy ci-gate version 2026.11: 1 violation(s), 0 denied, 0 unchecked"
    ]
    shown = page.evaluate("document.getElementById('trace').value")
    page.locator("#audit-list li a").click()
    (transfer,) = [s for s in second if s.attributes.get("gen_ai.tool.name") == "transfer"]
    assert page.evaluate("window.toolspanPage.selected()") == transfer.span_id
    assert page.evaluate("document.getElementById('trace').value") != shown
    assert _texts(opened, "#timeline .row.flagged .label") == ["transfer"]


def test_hostile_arguments_in_reasons_are_shown_as_text_and_run_nothing(
    open_page: Callable[..., Opened],
) -> None:
    payloads = [p for p in hostile_payloads() if len(p) < 300][:40]
    steps = [("send_email", {"to": p}, None) for p in payloads]
    policy = parse_policy(
        {
            "id": "mail",
            "version": "1",
            "rules": [
                {"id": "domain", "kind": "arguments", "tool": "send_email", "path": "to", "pattern": "^ok$"}
            ],
        }
    )
    spans = run_spans("assistant", steps)
    report = audit(spans, policy)
    assert len(report["violations"]) == len(payloads)
    opened = open_page(render_html(mark_pages(to_pages(spans), report)))
    page = opened.page
    listed = page.evaluate("document.getElementById('audit-list').textContent")
    reasons = [v["reason"] for v in report["violations"]]
    assert [r for r in reasons if r not in listed] == []
    page.locator("#audit-list li a").nth(len(payloads) - 1).click()
    assert reasons[-1] in page.evaluate("document.querySelector('#detail .finding').textContent")
    assert page.evaluate("[window.__pwnCalls, window.__pwned]") == [0, None]
    assert (opened.errors, page.evaluate("window.__cspViolations")) == ([], [])
    assert page.evaluate("document.querySelectorAll('#audit-list *:not(li, span, a)').length") == 0
