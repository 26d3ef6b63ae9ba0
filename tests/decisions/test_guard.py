"""Live policy checks (``configure(policy=...)``): a call that breaks a rule never runs and ends DENIED with
the rule on its span; the same trace audited offline gives the same verdicts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolspan
from tests.bridge.views.test_audit import CLEAN, POLICY, VIOLATING
from tests.support.instrumentation import exec_id, hex_id
from tests.support.policy_runs import TOOLS, record_run
from toolspan._decisions import chain
from toolspan._decisions.guard import PolicyGuard
from toolspan.bridge.readers import from_readable_spans
from toolspan.bridge.views import audit
from toolspan.policy import PolicyError, parse_policy
from toolspan.testing import capture_spans

DEFERRABLE = {"payments-approved", "no-mail-after-secrets"}  # rules an approver can satisfy


@pytest.fixture
def guarded(fresh_config: None) -> Iterator[None]:
    chain.install_guard(PolicyGuard(POLICY))
    yield
    chain.install_guard(None)


@pytest.fixture(autouse=True)
def _no_guard_left() -> Iterator[None]:
    yield
    chain.install_guard(None)
    assert chain.ACTIVE[0] == 0


def _tool_spans(spans: Any) -> list[Any]:
    return [s for s in spans if (s.attributes or {}).get("gen_ai.operation.name") == "execute_tool"]


@pytest.mark.usefixtures("guarded")
def test_a_denied_call_never_runs_and_its_span_says_why() -> None:
    ran: list[str] = []

    @toolspan.tool
    def shell(cmd: str) -> str:
        ran.append(cmd)
        TOOLS["web_search"](query="nested")  # would be a child span if the body ran
        return "ok"

    with (
        capture_spans() as finished,
        toolspan.agent("assistant"),
        pytest.raises(toolspan.ToolDenied) as info,
    ):
        shell("rm -rf /")
    assert ran == []
    note = "policy test-policy rule no-shell: tool 'shell' is denied"
    assert str(info.value) == note
    (span,) = _tool_spans(finished())
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "shell",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.arguments": '{"cmd": "rm -rf /"}',
        "openinference.span.kind": "TOOL",
        "tool.name": "shell",
        "input.value": '{"cmd": "rm -rf /"}',
        "input.mime_type": "application/json",
        "toolspan.execution_id": exec_id(span),
        "toolspan.tool_call_id": "call_" + hex_id(span),
        "toolspan.tool.state": "DENIED",
        "toolspan.policy.id": "test-policy",
        "toolspan.policy.version": "7",
        "toolspan.policy.rules": ("no-shell",),
        "error.type": "toolspan.ToolDenied",
    }
    assert [(e.name, dict(e.attributes or {})) for e in span.events] == [
        (
            "toolspan.permission_decided",
            {
                "toolspan.permission.decision": "deny",
                "toolspan.permission.note": note,
                "toolspan.permission.decided_by": "policy",
            },
        )
    ]


@pytest.mark.usefixtures("guarded")
def test_budgets_and_agents_are_per_run_and_inherited_by_sub_plans() -> None:
    search = TOOLS["web_search"]
    for _ in range(2):  # each agent run is a trace of its own: a budget of its own
        with capture_spans() as finished, toolspan.agent("assistant"):
            results = [search(query=str(i)) for i in range(3)]
            with pytest.raises(toolspan.ToolDenied, match="rule search-budget: call 4 of the calls"):
                search(query="3")
        assert results == [[f"result for {i}"] for i in range(3)]
        assert [s.attributes["toolspan.tool.state"] for s in _tool_spans(finished())] == ["COMPLETED"] * 3 + [
            "DENIED"
        ]
    spans = record_run(
        "researcher",
        [("delegate", {"task": "t", "steps": [("send_email", {"to": "a@example.com"}, None)]}, None)],
    )
    denied = [s for s in _tool_spans(spans) if s.attributes["toolspan.tool.state"] == "DENIED"]
    assert [(s.attributes["gen_ai.tool.name"], s.attributes["toolspan.policy.rules"]) for s in denied] == [
        ("send_email", ("researcher-tools",))
    ]


@pytest.mark.usefixtures("guarded")
def test_approval_rules_defer_to_an_approver_and_deny_without_one() -> None:
    call = [
        {"id": "c1", "type": "function", "function": {"name": "charge_card", "arguments": '{"amount": 5}'}}
    ]
    with capture_spans(), toolspan.agent("assistant"):
        asked: list[str] = []
        ok = toolspan.run_tool_calls(call, TOOLS, approve=lambda c: asked.append(c.name) or True)
        no = toolspan.run_tool_calls(call, TOOLS, approve=lambda c: False)
        bare = toolspan.run_tool_calls(call, TOOLS)
    assert asked == ["charge_card"]
    assert ok[0]["content"] == '"charged"'
    assert no[0]["content"] == "PermissionDenied: denied by the approver"
    assert bare[0]["content"] == (
        "PermissionDenied: policy test-policy rule payments-approved:"
        " tool 'charge_card' ran without an approval"
    )


def _verdicts(spans: list[Any]) -> tuple[dict[str, list[str]], dict[str, list[str]], list[Any]]:
    live = {
        format(s.context.span_id, "016x"): list(s.attributes["toolspan.policy.rules"])
        for s in _tool_spans(spans)
        if "toolspan.policy.rules" in (s.attributes or {})
    }
    report = audit(from_readable_spans(spans), POLICY)
    offline: dict[str, list[str]] = {}
    for finding in report["enforced"]:
        offline.setdefault(finding["span_id"], []).append(finding["rule_id"])
    return live, offline, report["violations"]


SCENARIOS = [(a, s) for a, s in CLEAN] + [(a, s) for a, s, _ in VIOLATING]


@pytest.mark.usefixtures("guarded")
@pytest.mark.parametrize(
    ("agent", "steps"),
    [x for x in SCENARIOS if not any(isinstance(step, list) for step in x[1])],  # parallel batches race
)
def test_the_same_trace_gets_the_same_verdicts_live_and_offline(agent: str, steps: list[Any]) -> None:
    spans = record_run(agent, steps)
    live, offline, violations = _verdicts(spans)
    assert violations == []  # nothing that breaks a rule ran
    for span_id, rules in offline.items():
        if span_id in live:
            assert rules == live[span_id]
        else:  # denied by its approver, not by the policy: only rules an approver can satisfy
            assert set(rules) <= DEFERRABLE, rules
    assert set(live) <= set(offline)


def test_configure_loads_the_policy_from_the_argument_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_config: None
) -> None:
    doc = {"id": "p", "version": 1, "rules": [{"id": "no-shell", "kind": "tools", "deny": ["shell"]}]}
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(doc))
    with capture_spans():
        toolspan.configure(policy=path, instrument_threading=False)
        with pytest.raises(toolspan.ToolDenied, match=r"^policy p rule no-shell: "):
            TOOLS["shell"](cmd="ls")
        chain.install_guard(None)
        assert TOOLS["shell"](cmd="ls") == ""
        monkeypatch.setenv("TOOLSPAN_POLICY", str(path))
        toolspan.configure(instrument_threading=False)
        with pytest.raises(toolspan.ToolDenied):
            TOOLS["shell"](cmd="ls")
        chain.install_guard(None)
        (tmp_path / "bad.json").write_text('{"id": "p"}')
        monkeypatch.setenv("TOOLSPAN_POLICY", str(tmp_path / "bad.json"))
        with pytest.raises(PolicyError, match=r"bad\.json\.rules: required"):
            toolspan.configure(instrument_threading=False)
        with pytest.raises(TypeError, match=r"policy must be a file path or a toolspan\.policy\.Policy"):
            toolspan.configure(policy=42, instrument_threading=False)  # type: ignore[arg-type]


def test_the_guard_works_with_tracing_off(fresh_config: None) -> None:
    chain.install_guard(
        PolicyGuard(
            parse_policy(
                {
                    "id": "p",
                    "version": 1,
                    "rules": [
                        {"id": "r", "kind": "arguments", "tool": "transfer", "path": "amount", "max": 10}
                    ],
                }
            )
        )
    )
    assert TOOLS["transfer"](amount=10) == "ok"
    with pytest.raises(toolspan.ToolDenied, match=r"argument 'amount' is 11, above the maximum 10"):
        TOOLS["transfer"](amount=11)


def test_a_failing_policy_check_denies_the_call(fresh_config: None, monkeypatch: pytest.MonkeyPatch) -> None:
    guard = PolicyGuard(POLICY)
    chain.install_guard(guard)

    def broken(self: Any, call: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr("toolspan.policy.Checker.evaluate", broken)
    with pytest.raises(
        toolspan.ToolDenied,
        match=r"^policy test-policy rule policy-error: the policy check failed: RuntimeError: boom$",
    ):
        TOOLS["read_file"](path="/a")


def test_async_and_generator_tools_are_checked_before_their_bodies(fresh_config: None) -> None:
    import asyncio

    chain.install_guard(
        PolicyGuard(
            parse_policy(
                {"id": "p", "version": 1, "rules": [{"id": "no-shell", "kind": "tools", "deny": ["shell*"]}]}
            )
        )
    )
    ran: list[str] = []

    @toolspan.tool
    async def shell_async(cmd: str) -> str:
        ran.append("async")
        return cmd

    @toolspan.tool
    def shell_lines(cmd: str) -> Any:
        ran.append("gen")
        yield cmd

    @toolspan.tool
    async def shell_stream(cmd: str) -> Any:
        ran.append("agen")
        yield cmd

    @toolspan.tool
    def echo_lines(text: str) -> Any:
        yield from text.split()

    async def consume_agen() -> list[str]:
        return [item async for item in shell_stream("ls")]

    with pytest.raises(toolspan.ToolDenied, match=r"rule no-shell: tool 'shell_async' is denied$"):
        asyncio.run(shell_async("ls"))
    with pytest.raises(toolspan.ToolDenied, match=r"rule no-shell: tool 'shell_lines' is denied$"):
        list(shell_lines("ls"))
    with pytest.raises(toolspan.ToolDenied, match=r"rule no-shell: tool 'shell_stream' is denied$"):
        asyncio.run(consume_agen())
    assert ran == []
    assert list(echo_lines("a b")) == ["a", "b"]  # allowed: the body runs and yields as before
