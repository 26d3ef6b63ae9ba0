"""Policy files (parsing, precise errors) and the checker's verdicts, rule kind by rule kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.support.paths import REPO
from toolspan.policy import Call, Checker, Finding, PolicyError, load_policy, parse_policy
from toolspan.policy._model import ArgumentRule, BudgetRule, OrderRule, ToolsRule

SCHEMA = json.loads((REPO / "src/toolspan/policy/schemas/policy.schema.json").read_text())


def policy(*rules: dict[str, Any]) -> Any:
    return parse_policy({"id": "p", "version": 1, "rules": list(rules)})


def verdicts(pol: Any, *calls: Call) -> list[list[Finding]]:
    checker = Checker(pol)
    return [list(checker.check(c).violations) for c in calls]


def test_parse_builds_typed_rules_and_normalises_version() -> None:
    pol = parse_policy(
        {
            "id": "prod",
            "version": 3,
            "description": "agents in production",
            "rules": [
                {"id": "r1", "kind": "tools", "agent": "researcher", "allow": ["web_*"]},
                {"id": "r2", "kind": "arguments", "tool": "sql", "path": "q.0.text", "max_length": 5},
                {"id": "r3", "kind": "budget", "max_calls": 2},
                {"id": "r4", "kind": "order", "after": "a", "forbid": "b", "unless_approved": False},
            ],
        }
    )
    assert (pol.id, pol.version, pol.description) == ("prod", "3", "agents in production")
    r1, r2, r3, r4 = pol.rules
    assert r1 == ToolsRule(id="r1", agents=("researcher",), description="", allow=("web_*",), deny=())
    assert isinstance(r2, ArgumentRule)
    assert (r2.tool, r2.path, r2.max_length, r2.required) == ("sql", ("q", 0, "text"), 5, False)
    assert r3 == BudgetRule(id="r3", agents=(), description="", tool="*", max_calls=2)
    assert r4 == OrderRule(id="r4", agents=(), description="", after="a", forbid="b", unless_approved=False)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "f.json: expected a policy object at the top level"),
        ({"id": "p", "version": 1}, "f.json.rules: required: a list of rules"),
        ({"version": 1, "rules": []}, "f.json.id: required"),
        ({"id": "p", "rules": []}, "f.json.version: required"),
        ({"id": "p", "version": 1, "rules": [], "extra": 1}, "f.json.extra: unknown field"),
        ({"id": "p", "version": 1, "rules": [3]}, "f.json: rules[0]: expected an object"),
        (
            {"id": "p", "version": 1, "rules": [{"id": "a", "kind": "nope"}]},
            "f.json: rules[0].kind: unknown kind 'nope';"
            " expected one of approval, arguments, budget, order, tools",
        ),
        (
            {"id": "p", "version": 1, "rules": [{"id": "a", "kind": "tools"}]},
            "f.json: rules[0]: a 'tools' rule needs 'allow' or 'deny'",
        ),
        (
            {"id": "p", "version": 1, "rules": [{"id": "a", "kind": "tools", "deny": "x", "max": 1}]},
            "f.json: rules[0].max: unknown field for a 'tools' rule",
        ),
        (
            {"id": "p", "version": 1, "rules": [{"id": "a", "kind": "budget", "max_calls": -1}]},
            "f.json: rules[0].max_calls: expected a whole number from 0 to 9007199254740992, got -1",
        ),
        (
            {"id": "p", "version": 1, "rules": [{"id": "a", "kind": "budget", "max_calls": True}]},
            "f.json: rules[0].max_calls: expected a whole number from 0 to 9007199254740992, got True",
        ),
        (
            {"id": "p", "version": 1, "rules": [{"id": "a", "kind": "arguments", "tool": "t", "path": "x"}]},
            "f.json: rules[0]: an 'arguments' rule needs one of"
            " pattern, not_pattern, min, max, max_length, enum, required",
        ),
        (
            {
                "id": "p",
                "version": 1,
                "rules": [{"id": "a", "kind": "arguments", "tool": "t", "path": "x", "pattern": "("}],
            },
            "f.json: rules[0].pattern: not a valid RE2 regular expression (no backreferences or"
            " lookarounds): missing ): (",
        ),
        (
            {
                "id": "p",
                "version": 1,
                "rules": [{"id": "a", "kind": "arguments", "tool": "t", "path": "x..y", "max": 1}],
            },
            "f.json: rules[0].path: empty segment in 'x..y'",
        ),
        (
            {
                "id": "p",
                "version": 1,
                "rules": [{"id": "a", "kind": "arguments", "tool": "t", "path": "x", "max": "ten"}],
            },
            "f.json: rules[0].max: expected a number, got 'ten'",
        ),
        (
            {"id": "p", "version": 1, "rules": [{"id": "a", "kind": "order", "after": "x"}]},
            "f.json: rules[0].forbid: required",
        ),
        (
            {"id": "p", "version": 1, "rules": [{"id": "a", "kind": "tools", "deny": [1]}]},
            "f.json: rules[0].deny: expected a name or a list of names (glob patterns allowed)",
        ),
        (
            {
                "id": "p",
                "version": 1,
                "rules": [
                    {"id": "a", "kind": "tools", "deny": "x"},
                    {"id": "a", "kind": "tools", "deny": "y"},
                ],
            },
            "f.json: rules[1].id: duplicate rule id 'a'",
        ),
    ],
)
def test_bad_policies_are_rejected_naming_the_field(doc: Any, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(doc, "f.json")
    assert str(info.value) == message


def test_load_policy_json_yaml_and_unreadable_files(tmp_path: Path) -> None:
    doc = {"id": "p", "version": "2", "rules": [{"id": "r", "kind": "tools", "deny": ["rm"]}]}
    (tmp_path / "p.json").write_text(json.dumps(doc))
    (tmp_path / "p.yaml").write_text("id: p\nversion: '2'\nrules:\n  - {id: r, kind: tools, deny: [rm]}\n")
    assert load_policy(tmp_path / "p.json") == load_policy(tmp_path / "p.yaml") == parse_policy(doc)
    (tmp_path / "bad.json").write_text('{"id": "p",\n "version": }')
    with pytest.raises(PolicyError, match=r"bad\.json:2: not valid JSON: Expecting value$"):
        load_policy(tmp_path / "bad.json")
    (tmp_path / "bad.yml").write_text("id: p\nrules: [\n")
    with pytest.raises(PolicyError, match=r"bad\.yml:3: not valid YAML: "):
        load_policy(tmp_path / "bad.yml")
    with pytest.raises(PolicyError, match=r"missing\.json: cannot read: "):
        load_policy(tmp_path / "missing.json")


def test_schema_accepts_what_the_loader_accepts_and_rejects_what_it_rejects() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    good = {
        "id": "p",
        "version": 1,
        "rules": [
            {"id": "a", "kind": "tools", "agent": ["x", "y*"], "allow": ["t"]},
            {"id": "b", "kind": "arguments", "tool": "t", "path": "a.0", "enum": [1, "x"]},
            {"id": "c", "kind": "approval", "tools": "pay*"},
            {"id": "d", "kind": "budget", "tool": "s", "max_calls": 0},
            {"id": "e", "kind": "order", "after": "a", "forbid": "b"},
        ],
    }
    validator.validate(good)
    parse_policy(good)
    bad_rules = [
        {"id": "a", "kind": "tools"},
        {"id": "a", "kind": "tools", "deny": "x", "max": 1},
        {"id": "b", "kind": "arguments", "tool": "t", "path": "a"},
        {"id": "d", "kind": "budget"},
        {"id": "e", "kind": "order", "after": "a"},
        {"id": "f", "kind": "sometimes", "deny": "x"},
    ]
    for rule in bad_rules:
        doc = {"id": "p", "version": 1, "rules": [rule]}
        assert not validator.is_valid(doc), rule
        with pytest.raises(PolicyError):
            parse_policy(doc)


def test_tools_rule_allow_and_deny_globs_scoped_to_agents_and_their_sub_plans() -> None:
    pol = policy(
        {"id": "researcher", "kind": "tools", "agent": "research*", "allow": ["web_*", "read_file"]},
        {"id": "no-shell", "kind": "tools", "deny": ["shell", "sudo_*"]},
    )
    got = verdicts(
        pol,
        Call("web_search", agents=("researcher",)),
        Call("send_email", agents=("researcher",)),
        Call("send_email", agents=("researcher", "helper")),  # a sub-plan's agent inherits the rule
        Call("send_email", agents=("writer",)),
        Call("sudo_rm", agents=("writer",)),
    )
    assert got == [
        [],
        [
            Finding(
                "researcher", "tools", "tool 'send_email' is not among the allowed tools for agent research*"
            )
        ],
        [
            Finding(
                "researcher", "tools", "tool 'send_email' is not among the allowed tools for agent research*"
            )
        ],
        [],
        [Finding("no-shell", "tools", "tool 'sudo_rm' is denied")],
    ]


def test_argument_checks() -> None:
    pol = policy(
        {"id": "limit", "kind": "arguments", "tool": "transfer", "path": "amount", "min": 1, "max": 1000},
        {"id": "cur", "kind": "arguments", "tool": "transfer", "path": "currency", "enum": ["EUR", "USD"]},
        {
            "id": "sql",
            "kind": "arguments",
            "tool": "run_*",
            "path": "query",
            "not_pattern": r"(?i)drop\s+table",
        },
        {
            "id": "to",
            "kind": "arguments",
            "tool": "mail",
            "path": "to.0",
            "pattern": "@example\\.com$",
            "required": True,
        },
        {"id": "len", "kind": "arguments", "tool": "mail", "path": "body", "max_length": 5},
    )
    got = verdicts(
        pol,
        Call("transfer", arguments={"amount": 1000, "currency": "EUR"}),
        Call("transfer", arguments={"amount": 1000.5, "currency": "GBP"}),
        Call("transfer", arguments={"amount": 0, "currency": "USD"}),
        Call("transfer", arguments={"amount": "lots", "currency": "USD"}),
        Call("transfer", arguments={"amount": True}),
        Call("run_sql", arguments={"query": "Drop  TABLE users"}),
        Call("run_sql", arguments={"query": "select 1"}),
        Call("mail", arguments={"to": ["a@example.com"], "body": "hi"}),
        Call("mail", arguments={"to": ["a@example.com.evil"], "body": "hello!"}),
        Call("mail", arguments={"to": [], "body": [1, 2]}),
    )
    assert got == [
        [],
        [
            Finding("limit", "arguments", "argument 'amount' is 1000.5, above the maximum 1000"),
            Finding("cur", "arguments", 'argument \'currency\' is "GBP", not one of ["EUR", "USD"]'),
        ],
        [Finding("limit", "arguments", "argument 'amount' is 0, below the minimum 1")],
        [Finding("limit", "arguments", "argument 'amount' is \"lots\", not a number")],
        [Finding("limit", "arguments", "argument 'amount' is true, not a number")],
        [
            Finding(
                "sql",
                "arguments",
                "argument 'query' is \"Drop  TABLE users\","
                " which matches the forbidden '(?i)drop\\\\s+table'",
            )
        ],
        [],
        [],
        [
            Finding(
                "to",
                "arguments",
                "argument 'to.0' is \"a@example.com.evil\", which does not match '@example\\\\.com$'",
            ),
            Finding("len", "arguments", "argument 'body' has length 6, above the maximum 5"),
        ],
        [Finding("to", "arguments", "argument 'to.0' is missing")],
    ]


def test_arguments_not_recorded_are_unchecked_not_passed() -> None:
    pol = policy({"id": "limit", "kind": "arguments", "tool": "transfer", "path": "amount", "max": 10})
    verdict = Checker(pol).check(Call("transfer", arguments=None, arguments_recorded=False))
    assert verdict.violations == ()
    assert verdict.unchecked == (
        Finding("limit", "arguments", "arguments of 'transfer' were not recorded (capture off?)"),
    )


def test_approval_rule_needs_an_allow_decision_for_a_call_that_ran() -> None:
    pol = policy({"id": "pay", "kind": "approval", "tools": ["charge_*"]})
    got = verdicts(
        pol,
        Call("charge_card", approved=True),
        Call("charge_card"),
        Call("charge_card", ran=False),  # denied without an approval: the rule held (the audit says enforced)
        Call("refund"),
    )
    assert got == [
        [],
        [Finding("pay", "approval", "tool 'charge_card' ran without an approval")],
        [Finding("pay", "approval", "tool 'charge_card' was called without an approval")],
        [],
    ]


def test_budgets_count_only_calls_that_ran_per_checker() -> None:
    pol = policy(
        {"id": "search", "kind": "budget", "tool": "web_search", "max_calls": 2},
        {"id": "all", "kind": "budget", "max_calls": 3},
    )
    got = verdicts(
        pol,
        Call("web_search"),
        Call("web_search", ran=False),
        Call("web_search"),
        Call("web_search"),
        Call("read"),
    )
    assert got == [
        [],
        [],
        [],
        [Finding("search", "budget", "call 3 of the calls of 'web_search' in this run; the budget is 2")],
        [Finding("all", "budget", "call 4 of the tool calls in this run; the budget is 3")],
    ]
    assert verdicts(pol, Call("web_search")) == [[]]  # a new checker is a new run


def test_order_rule_unless_approved() -> None:
    pol = policy(
        {"id": "mail", "kind": "order", "after": "read_secret*", "forbid": "send_*"},
        {"id": "hard", "kind": "order", "after": "wipe", "forbid": "deploy", "unless_approved": False},
    )
    got = verdicts(
        pol,
        Call("send_email"),
        Call("read_secrets", ran=False),  # denied: did not run, so it does not count
        Call("send_email"),
        Call("read_secrets"),
        Call("send_email", approved=True),
        Call("send_sms"),
        Call("wipe"),
        Call("deploy", approved=True),
    )
    assert got == [
        [],
        [],
        [],
        [],
        [],
        [
            Finding(
                "mail",
                "order",
                "tool 'send_sms' ran after 'read_secrets' in the same run without an approval",
            )
        ],
        [],
        [Finding("hard", "order", "tool 'deploy' ran after 'wipe' in the same run")],
    ]
