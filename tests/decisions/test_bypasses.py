"""The decision chain judges the real call: every bypass of the live policy, the approvals and the approvals
book, each tried as a hostile caller would, is refused; and the offline audit of the same run agrees."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

import toolspan
from toolspan import semconv
from toolspan._decisions import chain
from toolspan._decisions.guard import PolicyGuard
from toolspan.bridge.readers import from_readable_spans
from toolspan.bridge.views import audit
from toolspan.config import Config, set_config
from toolspan.policy import parse_policy
from toolspan.testing import capture_spans

POLICY = parse_policy(
    {
        "id": "hostile",
        "version": 1,
        "rules": [
            {"id": "pay-max", "kind": "arguments", "tool": "pay", "path": "amount", "max": 100},
            {
                "id": "no-drop",
                "kind": "arguments",
                "tool": "run_sql",
                "path": "query",
                "not_pattern": r"(?i)drop\s+table",
            },
            {
                "id": "no-live-keys",
                "kind": "arguments",
                "tool": "fetch",
                "path": "url",
                "not_pattern": "sk_live_",
            },
            {
                "id": "no-ab",
                "kind": "arguments",
                "tool": "search",
                "path": "filters",
                "not_pattern": r"a\s+b",
            },
            {"id": "one-only", "kind": "arguments", "tool": "pick", "path": "n", "enum": [1]},
            {"id": "cards-approved", "kind": "approval", "tools": ["charge_card"]},
            {"id": "no-mail-after-secrets", "kind": "order", "after": "read_secrets", "forbid": "send_email"},
        ],
    }
)

RAN: list[tuple[str, Any]] = []  # (tool, what its body received), for every body that ran


@toolspan.tool
def pay(memo: str, amount: Any) -> str:
    RAN.append(("pay", amount))
    return f"paid {amount}"


@toolspan.tool
def run_sql(query: str) -> int:
    RAN.append(("run_sql", len(query)))
    return 1


@toolspan.tool
def fetch(url: str) -> str:
    RAN.append(("fetch", url))
    return "page"


@toolspan.tool
def search(filters: dict[str, Any]) -> list[str]:
    RAN.append(("search", filters))
    return []


@toolspan.tool
def pick(n: Any) -> Any:
    RAN.append(("pick", n))
    return n


@toolspan.tool
def charge_card(amount: int) -> str:
    RAN.append(("charge_card", amount))
    return "charged"


@toolspan.tool
def process_order(amount: int) -> str:
    RAN.append(("process_order", amount))
    return charge_card(amount)  # a nested call: its own rules apply


@toolspan.tool
def read_secrets() -> str:
    RAN.append(("read_secrets", None))
    return "s3cr3t"


@toolspan.tool
def send_email(to: str) -> str:
    RAN.append(("send_email", to))
    return "sent"


@toolspan.tool
def notify(to: str) -> str:
    RAN.append(("notify", to))
    return send_email(to)


TOOLS = [pay, run_sql, fetch, search, pick, charge_card, process_order, read_secrets, send_email, notify]


@pytest.fixture(autouse=True)
def guarded(fresh_config: None) -> Iterator[None]:
    RAN.clear()
    chain.install_guard(PolicyGuard(POLICY))
    yield
    chain.install_guard(None)
    assert chain.ACTIVE[0] == 0


def _call(name: str, args: dict[str, Any], call_id: str = "call_1") -> list[dict[str, Any]]:
    return [{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]


def _tool_spans(spans: Any, name: str) -> list[Any]:
    return [s for s in spans if (s.attributes or {}).get("gen_ai.tool.name") == name]


def _denied_by(span: Any) -> list[str]:
    attrs = span.attributes or {}
    assert attrs[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_DENIED
    return list(attrs[semconv.TOOLSPAN_POLICY_RULES])


def _offline(spans: Any) -> dict[str, Any]:
    report = audit(from_readable_spans(list(spans)), POLICY)
    return {
        bucket: sorted((f["tool_name"], f["rule_id"]) for f in report[bucket])
        for bucket in ("violations", "enforced", "unchecked")
    }


BYPASSES = [
    # The byte budget cut `amount` away from the recorded copy; the body would have received it.
    ("pay", {"memo": "x" * 100_000, "amount": 1000}, "pay-max"),
    # The pattern's match lies past the budget's cut.
    ("run_sql", {"query": "select 1;" + " " * 17_000 + "drop table users"}, "no-drop"),
    # Redaction hid the key from the recorded copy.
    ("fetch", {"url": "https://api.example/v1?api_key=sk_live_123"}, "no-live-keys"),
    # A non-string value: its texts are matched, not its escaped JSON.
    ("search", {"filters": {"q": "a\tb"}}, "no-ab"),
    ("search", {"filters": ["x", {"deep": ["a \n b"]}]}, "no-ab"),
    # JSON types, not Python equality: true and 1.0 are not 1.
    ("pick", {"n": True}, "one-only"),
    ("pick", {"n": 1.0}, "one-only"),
]


@pytest.mark.parametrize(("tool", "args", "rule"), BYPASSES)
def test_the_guard_judges_the_arguments_the_body_would_receive(
    tool: str, args: dict[str, Any], rule: str
) -> None:
    fn = {f.__name__: f for f in TOOLS}[tool]
    with (
        capture_spans() as finished,
        toolspan.agent("assistant"),
        pytest.raises(toolspan.ToolDenied) as info,
    ):
        fn(**args)
    assert RAN == []
    assert f"rule {rule}:" in str(info.value)
    (span,) = _tool_spans(finished(), tool)
    assert _denied_by(span) == [rule]
    assert _offline(finished())["enforced"] == [(tool, rule)]
    assert _offline(finished())["violations"] == []


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("pay", {"memo": "x" * 100_000, "amount": 100}),
        ("run_sql", {"query": "select 1;" + " " * 17_000 + "select drop_table_count"}),
        ("fetch", {"url": "https://api.example/v1?api_key=pk_test_1"}),
        ("search", {"filters": {"q": "ab", "a": "b"}}),
        ("pick", {"n": 1}),
    ],
)
def test_calls_within_the_rules_run_whatever_their_size(tool: str, args: dict[str, Any]) -> None:
    fn = {f.__name__: f for f in TOOLS}[tool]
    with capture_spans() as finished, toolspan.agent("assistant"):
        fn(**args)
    assert [name for name, _ in RAN] == [tool]
    report = _offline(finished())
    assert (report["violations"], report["enforced"]) == ([], [])


def test_a_tool_called_inside_an_approved_tools_body_needs_its_own_approval() -> None:
    asked: list[str] = []
    with capture_spans() as finished, toolspan.agent("assistant"):
        (result,) = toolspan.run_tool_calls(
            _call("process_order", {"amount": 999}), TOOLS, approve=lambda c: asked.append(c.name) or True
        )
    assert asked == ["process_order"]  # asked once, for the call it was asked for
    assert RAN == [("process_order", 999)]  # charge_card's body never ran
    assert result["content"].startswith("PermissionDenied: policy hostile rule cards-approved:")
    (card,) = _tool_spans(finished(), "charge_card")
    assert _denied_by(card) == ["cards-approved"]
    assert _offline(finished()) == {
        "violations": [],
        "enforced": [("charge_card", "cards-approved")],
        "unchecked": [],
    }


def test_an_order_rule_unless_approved_holds_for_a_call_nested_in_an_approved_body() -> None:
    with capture_spans() as finished, toolspan.agent("assistant"):
        read_secrets()
        (result,) = toolspan.run_tool_calls(_call("notify", {"to": "a@b.c"}), TOOLS, approve=lambda c: True)
        # The approved call itself is let through by its approval.
        (direct,) = toolspan.run_tool_calls(
            _call("send_email", {"to": "a@b.c"}), TOOLS, approve=lambda c: True
        )
    assert RAN == [("read_secrets", None), ("notify", "a@b.c"), ("send_email", "a@b.c")]
    assert result["content"].startswith("PermissionDenied: policy hostile rule no-mail-after-secrets:")
    assert direct["content"] == '"sent"'
    nested, approved = sorted(_tool_spans(finished(), "send_email"), key=lambda s: s.start_time)
    assert _denied_by(nested) == ["no-mail-after-secrets"]
    assert (approved.attributes or {})[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_COMPLETED
    assert _offline(finished()) == {
        "violations": [],
        "enforced": [("send_email", "no-mail-after-secrets")],
        "unchecked": [],
    }


def test_arguments_edited_by_an_approver_are_checked_before_the_body_runs() -> None:
    edit = toolspan.Approval("allow", by="mallory", arguments={"memo": "m", "amount": 1000})
    with capture_spans() as finished, toolspan.agent("assistant"):
        (denied,) = toolspan.run_tool_calls(
            _call("pay", {"memo": "m", "amount": 10}), TOOLS, approve=lambda c: edit
        )
        fine = toolspan.Approval("allow", by="bob", arguments={"memo": "m", "amount": 50})
        (ran,) = toolspan.run_tool_calls(
            _call("pay", {"memo": "m", "amount": 10}), TOOLS, approve=lambda c: fine
        )
    assert RAN == [("pay", 50)]
    assert denied["content"] == (
        "PermissionDenied: policy hostile rule pay-max:"
        " edited argument 'amount' is 1000, above the maximum 100"
    )
    assert ran["content"] == '"paid 50"'
    first, _ = sorted(_tool_spans(finished(), "pay"), key=lambda s: s.start_time)
    assert _denied_by(first) == ["pay-max"]
    assert _offline(finished()) == {"violations": [], "enforced": [("pay", "pay-max")], "unchecked": []}


def test_the_offline_audit_checks_the_edited_arguments_the_body_ran_with() -> None:
    chain.install_guard(None)  # recorded by an application without the live policy
    edit = toolspan.Approval("allow", arguments={"memo": "m", "amount": 1000})
    with capture_spans() as finished, toolspan.agent("assistant"):
        toolspan.run_tool_calls(_call("pay", {"memo": "m", "amount": 10}), TOOLS, approve=lambda c: edit)
    assert RAN == [("pay", 1000)]
    report = audit(from_readable_spans(list(finished())), POLICY)
    assert [(f["rule_id"], f["reason"]) for f in report["violations"]] == [
        ("pay-max", "edited argument 'amount' is 1000, above the maximum 100")
    ]


class _EqualsEverything:
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


class _AllowStr(str):
    pass


@pytest.mark.parametrize(
    "answer",
    [
        mock.ANY,
        _EqualsEverything(),
        _AllowStr("allow"),
        ("allow",),
        (mock.ANY, "note"),
        toolspan.Approval(mock.ANY),
    ],
    ids=["ANY", "equals-everything", "str-subclass", "one-tuple", "ANY-in-tuple", "ANY-in-Approval"],
)
def test_an_answer_that_only_claims_to_allow_denies(answer: Any) -> None:
    chain.install_guard(None)
    with capture_spans() as finished:
        (result,) = toolspan.run_tool_calls(
            _call("pay", {"memo": "m", "amount": 1}), TOOLS, approve=lambda c: answer
        )
    assert RAN == []
    assert result["content"].startswith("PermissionDenied: approval failed: ValueError: approve returned ")
    (span,) = _tool_spans(finished(), "pay")
    assert (span.attributes or {})[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_DENIED


def test_the_approvals_book_never_gives_a_decision_to_another_call(tmp_path: Path) -> None:
    chain.install_guard(None)
    book = toolspan.ApprovalBook(tmp_path / "approvals.db", poll_interval=0.01)
    with capture_spans():
        (first,) = toolspan.run_tool_calls(
            _call("pay", {"memo": "m", "amount": 10}, "toolu_7"), TOOLS, approve=book, approve_timeout=0.2
        )
    assert first["content"].startswith("PermissionDenied: no decision within")
    book.decide("toolu_7", "allow", by="alice")
    with capture_spans():
        (other_args,) = toolspan.run_tool_calls(
            _call("pay", {"memo": "m", "amount": 999999}, "toolu_7"), TOOLS, approve=book
        )
        (other_tool,) = toolspan.run_tool_calls(_call("pick", {"n": 1}, "toolu_7"), TOOLS, approve=book)
        (same,) = toolspan.run_tool_calls(
            _call("pay", {"amount": 10, "memo": "m"}, "toolu_7"), TOOLS, approve=book
        )
    assert RAN == [("pay", 10)]  # only the call the decision was made for
    assert other_args["content"] == (
        "PermissionDenied: approval failed: LookupError: the approval book holds tool call 'toolu_7' of 'pay'"
        " with other arguments: a decision is never given to another call"
    )
    assert other_tool["content"].startswith(
        "PermissionDenied: approval failed: LookupError: the approval book holds tool call 'toolu_7' for tool"
        " 'pay', not 'pick'"
    )
    assert same["content"] == '"paid 10"'


def test_capture_off_never_weakens_the_policy_and_the_audit_names_the_rule() -> None:
    set_config(Config(capture_content=False))
    with capture_spans() as finished, toolspan.agent("assistant"):
        with pytest.raises(toolspan.ToolDenied):
            pay(memo="m", amount=1000)
        pay(memo="m", amount=5)
    assert RAN == [("pay", 5)]
    (denied, _) = sorted(_tool_spans(finished(), "pay"), key=lambda s: s.start_time)
    assert semconv.GEN_AI_TOOL_CALL_ARGUMENTS not in (denied.attributes or {})
    assert _denied_by(denied) == ["pay-max"]
    assert _offline(finished()) == {
        "violations": [],
        "enforced": [("pay", "pay-max")],  # named on the span: enforced, not unchecked
        "unchecked": [("pay", "pay-max")],  # the call that ran: its arguments were not recorded
    }


@pytest.mark.parametrize("async_", [False, True], ids=["thread-pool", "run_in_executor"])
def test_threads_that_do_not_inherit_the_context_are_judged_too(async_: bool) -> None:
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with capture_spans() as finished, toolspan.agent("assistant"), ThreadPoolExecutor(1) as pool:
        if async_:

            async def go() -> Any:
                return await asyncio.get_running_loop().run_in_executor(pool, lambda: pay("m", 1000))

            call: Any = lambda: asyncio.run(go())  # noqa: E731
        else:
            call = pool.submit(pay, "m", 1000).result
        with pytest.raises(toolspan.ToolDenied):
            call()
    assert RAN == []
    (span,) = _tool_spans(finished(), "pay")
    assert _denied_by(span) == ["pay-max"]


@contextlib.contextmanager
def _budget(size: int) -> Iterator[None]:
    set_config(Config(max_attribute_bytes=size))
    try:
        yield
    finally:
        set_config(Config())


def test_values_cut_or_redacted_in_the_record_are_unchecked_offline_never_passed() -> None:
    chain.install_guard(None)  # recorded without the live policy: only the audit judges
    with capture_spans() as finished, toolspan.agent("assistant"):
        pay("x" * 100_000, 5)  # `amount` cut away from the record
        run_sql("select 1;" + " " * 17_000 + "select 2")  # cut inside the value
        fetch("https://api.example/v1?api_key=sk_test_1")  # redacted inside the value
        pick(1)  # recorded whole: checked
        search({"q": "ok"})
    assert _offline(finished()) == {
        "violations": [],
        "enforced": [],
        "unchecked": [("fetch", "no-live-keys"), ("pay", "pay-max"), ("run_sql", "no-drop")],
    }


# --- live and offline agree --------------------------------------------------------------------------------


def _agreement(
    spans: list[Any], policy: Any, deferrable: set[str]
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """The live verdicts (rules named on each denied span) and the offline report of the same spans."""
    live = {
        format(s.context.span_id, "016x"): list((s.attributes or {})[semconv.TOOLSPAN_POLICY_RULES])
        for s in spans
        if semconv.TOOLSPAN_POLICY_RULES in (s.attributes or {})
    }
    report = audit(from_readable_spans(spans), policy)
    offline: dict[str, list[str]] = {}
    for finding in report["enforced"]:
        offline.setdefault(finding["span_id"], []).append(finding["rule_id"])
    assert report["violations"] == []  # nothing that breaks a rule ran
    for span_id, rules in offline.items():
        if span_id in live:
            assert rules == live[span_id]
        else:  # denied by its approver, not by the policy: only rules an approver can satisfy
            assert set(rules) <= deferrable, rules
    assert set(live) <= set(offline)
    return live, report


AUDIT_DEFERRABLE = {"payments-approved", "no-mail-after-secrets"}


def _audit_scenarios() -> list[tuple[str, list[Any]]]:
    from tests.bridge.views.test_audit import CLEAN, VIOLATING

    scenarios = [(a, s) for a, s in CLEAN] + [(a, s) for a, s, _ in VIOLATING]
    return [x for x in scenarios if not any(isinstance(step, list) for step in x[1])]  # parallel batches race


@pytest.mark.parametrize("variant", ["capture-off", "budget-64", "worker-thread"])
def test_live_and_offline_agree_on_every_audit_scenario_in_every_setting(variant: str) -> None:
    from tests.bridge.views.test_audit import POLICY as AUDIT_POLICY
    from tests.support.policy_runs import record_run

    chain.install_guard(PolicyGuard(AUDIT_POLICY))
    if variant == "capture-off":
        set_config(Config(capture_content=False))
    elif variant == "budget-64":
        set_config(Config(max_attribute_bytes=64))
    denied = 0
    for agent, steps in _audit_scenarios():
        if variant == "worker-thread":
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(1) as pool:
                spans = pool.submit(record_run, agent, steps).result()
        else:
            spans = record_run(agent, steps)
        live, _ = _agreement(spans, AUDIT_POLICY, AUDIT_DEFERRABLE)
        denied += len(live)
    assert denied >= 20  # the scenarios do deny: the agreement is not vacuous


NESTED_SCENARIOS: dict[str, Any] = {
    "nested approval": lambda: toolspan.run_tool_calls(
        _call("process_order", {"amount": 999}), TOOLS, approve=lambda c: True
    ),
    "nested order": lambda: (
        read_secrets(),
        toolspan.run_tool_calls(_call("notify", {"to": "a@b.c"}), TOOLS, approve=lambda c: True),
    ),
    "edit over the limit": lambda: toolspan.run_tool_calls(
        _call("pay", {"memo": "m", "amount": 1}),
        TOOLS,
        approve=lambda c: toolspan.Approval("allow", arguments={"memo": "m", "amount": 1000}),
    ),
    "edit within the limit": lambda: toolspan.run_tool_calls(
        _call("pay", {"memo": "m", "amount": 1}),
        TOOLS,
        approve=lambda c: toolspan.Approval("allow", arguments={"memo": "m", "amount": 99}),
    ),
    "cut value": lambda: pay("x" * 100_000, 1000),
    "redacted value": lambda: fetch("https://api.example/v1?api_key=sk_live_123"),
    "approved card": lambda: toolspan.run_tool_calls(
        _call("charge_card", {"amount": 5}), TOOLS, approve=lambda c: True
    ),
}


# The rules the live policy denies in each scenario (tool, rule), whatever the capture setting.
NESTED_DENIED: dict[str, list[tuple[str, str]]] = {
    "nested approval": [("charge_card", "cards-approved")],
    "nested order": [("send_email", "no-mail-after-secrets")],
    "edit over the limit": [("pay", "pay-max")],
    "edit within the limit": [],
    "cut value": [("pay", "pay-max")],
    "redacted value": [("fetch", "no-live-keys")],
    "approved card": [],
}


@pytest.mark.parametrize("capture", [True, False], ids=["capture-on", "capture-off"])
@pytest.mark.parametrize("name", list(NESTED_SCENARIOS))
def test_live_and_offline_agree_on_nested_calls_edits_and_hidden_values(name: str, capture: bool) -> None:
    set_config(Config(capture_content=capture))
    with capture_spans() as finished, toolspan.agent("assistant"), contextlib.suppress(toolspan.ToolDenied):
        NESTED_SCENARIOS[name]()
    spans = list(finished())
    live, report = _agreement(spans, POLICY, {"cards-approved", "no-mail-after-secrets"})
    tools = {
        format(s.context.span_id, "016x"): (s.attributes or {})["gen_ai.tool.name"]
        for s in spans
        if s.attributes and "gen_ai.tool.name" in s.attributes
    }
    assert (
        sorted((tools[span_id], rule) for span_id, rules in live.items() for rule in rules)
        == NESTED_DENIED[name]
    )
    assert sorted((f["tool_name"], f["rule_id"]) for f in report["enforced"]) == NESTED_DENIED[name]
    assert report["violations"] == []
