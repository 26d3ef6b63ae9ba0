"""``toolspan.bridge.views.audit``: recorded agent runs checked against a policy, offending nodes marked."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.bridge_data import validate
from tests.support.policy_runs import run_spans
from toolspan.bridge.views import audit, mark_pages, to_pages, to_trees
from toolspan.policy import parse_policy

POLICY = parse_policy(
    {
        "id": "test-policy",
        "version": 7,
        "rules": [
            {
                "id": "researcher-tools",
                "kind": "tools",
                "agent": "researcher",
                "allow": ["web_search", "read_*", "delegate"],
            },
            {"id": "no-shell", "kind": "tools", "deny": ["shell"]},
            {
                "id": "no-drop",
                "kind": "arguments",
                "tool": "run_sql",
                "path": "query",
                "not_pattern": r"(?i)\bdrop\s+table\b",
            },
            {"id": "transfer-limit", "kind": "arguments", "tool": "transfer", "path": "amount", "max": 1000},
            {
                "id": "currency",
                "kind": "arguments",
                "tool": "transfer",
                "path": "currency",
                "enum": ["EUR", "USD"],
            },
            {
                "id": "email-domain",
                "kind": "arguments",
                "tool": "send_email",
                "path": "to",
                "pattern": r"@example\.com$",
            },
            {"id": "payments-approved", "kind": "approval", "tools": ["charge_card"]},
            {"id": "search-budget", "kind": "budget", "tool": "web_search", "max_calls": 3},
            {"id": "run-budget", "kind": "budget", "max_calls": 8},
            {"id": "no-mail-after-secrets", "kind": "order", "after": "read_secrets", "forbid": "send_email"},
        ],
    }
)


def S(tool: str, approve: bool | None = None, **args: Any) -> tuple[str, dict[str, Any], bool | None]:
    return (tool, args, approve)


def sub(*steps: Any) -> tuple[str, dict[str, Any], None]:
    return ("delegate", {"task": "t", "steps": list(steps)}, None)


MAIL = S("send_email", to="a@example.com")

CLEAN: list[tuple[str, list[Any]]] = [
    ("assistant", [S("web_search", query="a"), S("web_search", query="b"), S("web_search", query="c")]),
    ("assistant", [S("transfer", amount=1000, currency="EUR")]),
    ("assistant", [S("transfer", amount=0.5, currency="USD")]),
    ("assistant", [S("run_sql", query="SELECT * FROM users")]),
    ("assistant", [S("run_sql", query="DELETE FROM tmp")]),
    ("assistant", [MAIL]),
    ("assistant", [MAIL, S("read_secrets", name="k")]),
    ("assistant", [S("read_secrets", name="k"), S("send_email", True, to="a@example.com")]),
    ("assistant", [S("charge_card", True, amount=5)]),
    ("assistant", [S("charge_card", False, amount=5)]),
    ("researcher", [S("web_search", query="x"), S("read_file", path="/a")]),
    ("researcher", [S("read_file", path="/a"), sub(S("web_search", query="y"))]),
    ("assistant", [S("read_file", path=f"/{i}") for i in range(5)] + [S("web_search", query="q")] * 3),
    ("assistant", [S("transfer", amount=999.99, currency="USD")]),
    ("assistant", [S("send_email", to="ops@example.com", body="please drop table x")]),
    ("assistant", [S("run_sql", query="SELECT drop_table_count FROM stats")]),
    ("writer", [S("web_search", query="a"), S("web_search", query="b"), MAIL]),
    ("assistant", [S("read_secrets", name="k")]),
    ("assistant", [S("charge_card", True, amount=1), S("charge_card", True, amount=2)]),
    ("assistant", []),
    ("assistant", [S("transfer", amount=-5, currency="EUR")]),  # the tool fails: no rule broken
    ("researcher", [sub(S("read_file", path="/b"))]),
    ("assistant", [sub(S("web_search", query="a")), S("web_search", query="b"), S("web_search", query="c")]),
    ("assistant", [MAIL, S("read_secrets", name="k"), S("web_search", query="z")]),
    ("assistant", [S("transfer", True, amount=1000, currency="EUR")]),
    ("assistant", [[S("web_search", query="a"), S("web_search", query="b"), S("web_search", query="c")]]),
    ("assistant", [S("read_file", path="/etc/hosts")]),
    ("assistant", [S("run_sql", query="UPDATE t SET dropped = 1")]),
    ("helper", [S("shell", False, cmd="ls")]),  # denied: the policy held (listed as enforced)
    ("assistant", [S("read_secrets", name="k"), S("send_email", False, to="a@example.com")]),  # enforced too
]

VIOLATING: list[tuple[str, list[Any], list[str]]] = [
    ("assistant", [S("web_search", query=str(i)) for i in range(4)], ["search-budget"]),
    ("assistant", [S("transfer", amount=1001, currency="EUR")], ["transfer-limit"]),
    ("assistant", [S("transfer", amount=10, currency="GBP")], ["currency"]),
    ("assistant", [S("transfer", amount=5000, currency="JPY")], ["transfer-limit", "currency"]),
    ("assistant", [S("run_sql", query="DROP TABLE users")], ["no-drop"]),
    ("assistant", [S("run_sql", query="select 1; drop   table x")], ["no-drop"]),
    ("assistant", [S("send_email", to="a@evil.com")], ["email-domain"]),
    ("assistant", [S("read_secrets", name="k"), MAIL], ["no-mail-after-secrets"]),
    ("assistant", [S("read_secrets", name="k"), S("web_search", query="q"), MAIL], ["no-mail-after-secrets"]),
    ("assistant", [S("charge_card", amount=5)], ["payments-approved"]),
    ("researcher", [MAIL], ["researcher-tools"]),
    ("researcher", [S("run_sql", query="select 1")], ["researcher-tools"]),
    ("researcher", [sub(MAIL)], ["researcher-tools"]),
    ("assistant", [S("shell", cmd="rm -rf /")], ["no-shell"]),
    ("researcher", [S("shell", cmd="ls")], ["researcher-tools", "no-shell"]),
    ("assistant", [S("read_file", path=f"/{i}") for i in range(9)], ["run-budget"]),
    (
        "assistant",
        [
            S("web_search", query="a"),
            S("web_search", query="b"),
            sub(S("web_search", query="c"), S("web_search", query="d")),
        ],
        ["search-budget"],
    ),
    ("assistant", [S("transfer", amount="lots", currency="EUR")], ["transfer-limit"]),
    ("assistant", [sub(S("read_secrets", name="k")), MAIL], ["no-mail-after-secrets"]),
    ("researcher", [S("web_search", query=str(i)) for i in range(4)], ["search-budget"]),
    ("assistant", [S("send_email", to="x@example.com.evil.org")], ["email-domain"]),
    ("assistant", [S("transfer", amount=1000.01, currency="USD")], ["transfer-limit"]),
    ("assistant", [S("run_sql", query="Drop Table t")], ["no-drop"]),
    (
        "assistant",
        [S("read_secrets", name="k"), S("send_email", False, to="a@example.com"), MAIL],
        ["no-mail-after-secrets"],
    ),
    ("assistant", [S("charge_card", True, amount=1), S("charge_card", amount=2)], ["payments-approved"]),
    ("writer", [S("shell", cmd="ls")], ["no-shell"]),
    ("assistant", [[S("web_search", query=str(i)) for i in range(4)]], ["search-budget"]),
    (
        "assistant",
        [S("read_secrets", name="k"), S("send_email", to="a@evil.com")],
        ["email-domain", "no-mail-after-secrets"],
    ),
    (
        "researcher",
        [S("read_file", path="/a"), S("transfer", amount=50, currency="EUR")],
        ["researcher-tools"],
    ),
    ("writer", [sub(S("run_sql", query="DROP TABLE x"))], ["no-drop"]),
]


def _marked(node: dict[str, Any]) -> dict[str, list[str]]:
    out = {}
    stack = [node]
    while stack:
        n = stack.pop()
        if "policy_violations" in n:
            out[n["span_id"]] = n["policy_violations"]
        stack.extend(n["children"])
    return out


def _check_document(report: dict[str, Any]) -> None:
    validate("audit", report)
    for tree in report["trees"]:
        validate("tree", tree)


@pytest.mark.parametrize(("agent", "steps"), CLEAN, ids=[f"clean-{i}" for i in range(len(CLEAN))])
def test_clean_runs_have_no_violation(agent: str, steps: list[Any]) -> None:
    spans = run_spans(agent, steps)
    report = audit(spans, POLICY)
    _check_document(report)
    assert report["violations"] == []
    assert report["unchecked"] == []
    assert report["summary"]["traces"] == 1
    assert all(_marked(t["execution_tree"]) == {} for t in report["trees"])
    # Apart from the marks (none here), the trees are the plain execution trees of the same spans.
    assert report["trees"] == to_trees(spans)


def test_denied_calls_that_break_a_rule_are_listed_as_enforced() -> None:
    report = audit(run_spans(*CLEAN[9]), POLICY)  # charge_card denied by its approver
    assert [(e["rule_id"], e["reason"]) for e in report["enforced"]] == [
        ("payments-approved", "tool 'charge_card' was called without an approval")
    ]
    report = audit(run_spans(*CLEAN[28]), POLICY)
    assert [(e["rule_id"], e["tool_name"], e["agent"]) for e in report["enforced"]] == [
        ("no-shell", "shell", "helper")
    ]
    report = audit(run_spans(*CLEAN[29]), POLICY)
    assert [(e["rule_id"], e["reason"]) for e in report["enforced"]] == [
        (
            "no-mail-after-secrets",
            "tool 'send_email' ran after 'read_secrets' in the same run without an approval",
        )
    ]
    assert report["violations"] == []


@pytest.mark.parametrize(
    ("agent", "steps", "expected"), VIOLATING, ids=[f"violating-{i}" for i in range(len(VIOLATING))]
)
def test_violating_runs_are_caught(agent: str, steps: list[Any], expected: list[str]) -> None:
    spans = run_spans(agent, steps)
    report = audit(spans, POLICY)
    _check_document(report)
    violations = report["violations"]
    assert [v["rule_id"] for v in violations] == expected
    assert report["summary"]["violations"] == len(expected)
    tools = {s.span_id: s for s in spans}
    for v in violations:
        span = tools[v["span_id"]]
        assert v["trace_id"] == span.trace_id
        assert v["execution_id"] == "exec_" + span.span_id
        assert v["policy_id"] == "test-policy"
        assert v["policy_version"] == "7"
        assert span.attributes["gen_ai.tool.name"] == v["tool_name"]
    marked = _marked(report["trees"][0]["execution_tree"])
    expected_marks: dict[str, list[str]] = {}
    for v in violations:
        expected_marks.setdefault(v["span_id"], []).append(v["rule_id"])
    assert marked == expected_marks


def test_violation_entry_in_full() -> None:
    spans = run_spans("researcher", [sub(MAIL)])
    report = audit(spans, POLICY)
    mail = next(s for s in spans if s.attributes.get("gen_ai.tool.name") == "send_email")
    assert report["violations"] == [
        {
            "policy_id": "test-policy",
            "policy_version": "7",
            "rule_id": "researcher-tools",
            "rule_kind": "tools",
            "trace_id": mail.trace_id,
            "span_id": mail.span_id,
            "execution_id": "exec_" + mail.span_id,
            "call_id": "call_" + mail.span_id,
            "tool_name": "send_email",
            "agent": "helper",
            "reason": "tool 'send_email' is not among the allowed tools for agent researcher",
        }
    ]
    assert report["summary"] == {"traces": 1, "tool_calls": 2, "violations": 1, "enforced": 0, "unchecked": 0}
    assert report["policy"] == {"id": "test-policy", "version": "7"}


def test_several_traces_are_separate_runs_with_separate_budgets() -> None:
    three = [S("web_search", query=str(i)) for i in range(3)]
    spans = run_spans("assistant", three) + run_spans("assistant", three)
    report = audit(spans, POLICY)
    assert report["summary"] == {"traces": 2, "tool_calls": 6, "violations": 0, "enforced": 0, "unchecked": 0}


def test_capture_off_leaves_argument_rules_unchecked(content_off: None) -> None:
    report = audit(run_spans("assistant", [S("transfer", amount=5000, currency="JPY")]), POLICY)
    assert report["violations"] == []
    assert [(u["rule_id"], u["reason"]) for u in report["unchecked"]] == [
        ("transfer-limit", "arguments of 'transfer' were not recorded (capture off?)"),
        ("currency", "arguments of 'transfer' were not recorded (capture off?)"),
    ]


def test_same_spans_in_any_order_give_the_same_report() -> None:
    spans = run_spans("assistant", VIOLATING[8][1]) + run_spans("researcher", VIOLATING[12][1])
    assert audit(list(reversed(spans)), POLICY) == audit(spans, POLICY)


def _findings(page: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {step["id"]: step["policy_findings"] for step in page["steps"] if "policy_findings" in step}


def test_mark_pages_puts_every_finding_on_its_tool_step_and_nothing_else_changes() -> None:
    steps = [S("read_secrets", name="k"), MAIL, S("shell", cmd="ls"), S("shell", False, cmd="rm")]
    spans = run_spans("assistant", steps)
    report = audit(spans, POLICY)
    plain = to_pages(spans)
    (page,) = mark_pages(plain, report)
    validate("page", page)
    by_name = {s.attributes.get("gen_ai.tool.name"): s for s in spans if s.attributes.get("gen_ai.tool.name")}
    mail, shell = by_name["send_email"], next(s for s in spans if s.name == "execute_tool shell")
    denied = next(s for s in spans if s.name == "execute_tool shell" and s.span_id != shell.span_id)
    if shell.start_ns > denied.start_ns:
        shell, denied = denied, shell
    head = {"policy_id": "test-policy", "policy_version": "7"}
    assert _findings(page) == {
        mail.span_id: [
            {
                "outcome": "violation",
                "rule_id": "no-mail-after-secrets",
                "rule_kind": "order",
                "reason": "tool 'send_email' ran after 'read_secrets' in the same run without an approval",
                **head,
            }
        ],
        shell.span_id: [
            {
                "outcome": "violation",
                "rule_id": "no-shell",
                "rule_kind": "tools",
                "reason": "tool 'shell' is denied",
                **head,
            }
        ],
        denied.span_id: [
            {
                "outcome": "enforced",
                "rule_id": "no-shell",
                "rule_kind": "tools",
                "reason": "tool 'shell' is denied",
                **head,
            }
        ],
    }
    assert page["audit"] == {**head, "violations": 2, "enforced": 1, "unchecked": 0}
    # Apart from the marks, the page is the plain page of the same spans (which mark_pages left untouched).
    assert plain == to_pages(spans)
    assert {**page, "audit": None, "steps": None} == {**plain[0], "audit": None, "steps": None}
    unmarked = [{k: v for k, v in step.items() if k != "policy_findings"} for step in page["steps"]]
    assert unmarked == plain[0]["steps"]


def test_mark_pages_of_a_clean_run_has_a_summary_and_no_findings() -> None:
    spans = run_spans(*CLEAN[1])
    (page,) = mark_pages(to_pages(spans), audit(spans, POLICY))
    validate("page", page)
    assert page["audit"] == {
        "policy_id": "test-policy",
        "policy_version": "7",
        "violations": 0,
        "enforced": 0,
        "unchecked": 0,
    }
    assert _findings(page) == {}


def test_mark_pages_lists_unchecked_rules_and_keeps_traces_apart(content_off: None) -> None:
    first = run_spans("assistant", [S("transfer", amount=5000, currency="JPY")])
    second = run_spans("assistant", [S("shell", cmd="ls")])
    spans = second + first
    pages = mark_pages(to_pages(spans), audit(spans, POLICY))
    assert [p["trace_id"] for p in pages] == [first[0].trace_id, second[0].trace_id]
    reason = "arguments of 'transfer' were not recorded (capture off?)"
    transfer = next(s for s in first if s.name == "execute_tool transfer")
    assert _findings(pages[0]) == {
        transfer.span_id: [
            {
                "outcome": "unchecked",
                "rule_id": rule,
                "rule_kind": "arguments",
                "reason": reason,
                "policy_id": "test-policy",
                "policy_version": "7",
            }
            for rule in ("transfer-limit", "currency")
        ]
    }
    assert pages[0]["audit"]["unchecked"] == 2
    assert [f["rule_id"] for fs in _findings(pages[1]).values() for f in fs] == ["no-shell"]
    assert pages[1]["audit"] == {
        "policy_id": "test-policy",
        "policy_version": "7",
        "violations": 1,
        "enforced": 0,
        "unchecked": 0,
    }
