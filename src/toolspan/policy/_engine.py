"""The policy checker: one verdict per tool call, from facts any source can supply.

A ``Checker`` holds the state of one run (a trace): the calls that ran so far, for budgets and ordering. It
knows nothing of spans: the offline audit builds each ``Call`` from recorded spans, a live check from the
call about to run, so the same calls get the same verdicts either way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Final

from toolspan.policy._model import (
    ApprovalRule,
    ArgumentRule,
    BudgetRule,
    OrderRule,
    Policy,
    Rule,
    ToolsRule,
)

__all__ = ["Call", "Checker", "Finding", "Verdict"]

_MISSING: Final = object()


@dataclass(frozen=True, slots=True)
class Call:
    """What the checker needs of one tool call.

    ``agents``: the names of the agents the call runs under, outermost first (through sub-plans too);
    ``arguments``: the arguments as recorded (JSON values), ``None`` with ``arguments_recorded=False`` when
    they were not captured; ``approved``: an explicit allow decision was recorded for this call; ``ran``:
    the call's body ran (false for a denied call).
    """

    tool: str
    agents: tuple[str, ...] = ()
    arguments: Any = None
    arguments_recorded: bool = True
    approved: bool = False
    ran: bool = True


@dataclass(frozen=True, slots=True)
class Finding:
    rule_id: str
    kind: str
    reason: str


@dataclass(frozen=True, slots=True)
class Verdict:
    """``violations``: rules the call breaks; ``unchecked``: rules that apply but could not be evaluated."""

    violations: tuple[Finding, ...] = ()
    unchecked: tuple[Finding, ...] = ()

    @property
    def allowed(self) -> bool:
        return not self.violations


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(name, p) for p in patterns)


def _applies(rule: Rule, call: Call) -> bool:
    return not rule.agents or any(_matches(a, rule.agents) for a in call.agents)


def _lookup(value: Any, path: Sequence[str | int]) -> Any:
    for part in path:
        if isinstance(part, int) and isinstance(value, list):
            if part >= len(value):
                return _MISSING
            value = value[part]
        elif isinstance(value, dict) and str(part) in value:
            value = value[str(part)]
        else:
            return _MISSING
    return value


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=repr)


def _show(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _argument_problem(rule: ArgumentRule, arguments: Any) -> str | None:
    where = ".".join(str(p) for p in rule.path)
    value = _lookup(arguments, rule.path)
    if value is _MISSING:
        return f"argument {where!r} is missing" if rule.required else None
    if rule.enum is not None and value not in rule.enum:
        return f"argument {where!r} is {_show(value)}, not one of {_show(list(rule.enum))}"
    if rule.min is not None or rule.max is not None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"argument {where!r} is {_show(value)}, not a number"
        if rule.min is not None and value < rule.min:
            return f"argument {where!r} is {_show(value)}, below the minimum {rule.min:g}"
        if rule.max is not None and value > rule.max:
            return f"argument {where!r} is {_show(value)}, above the maximum {rule.max:g}"
    if rule.max_length is not None and isinstance(value, str | list | dict) and len(value) > rule.max_length:
        return f"argument {where!r} has length {len(value)}, above the maximum {rule.max_length}"
    if rule.pattern is not None and rule.pattern.search(_text(value)) is None:
        return f"argument {where!r} is {_show(value)}, which does not match {rule.pattern.pattern!r}"
    if rule.not_pattern is not None and rule.not_pattern.search(_text(value)) is not None:
        return (
            f"argument {where!r} is {_show(value)}, which matches the forbidden {rule.not_pattern.pattern!r}"
        )
    return None


@dataclass
class Checker:
    """Checks the tool calls of one run, in the order they started."""

    policy: Policy
    _counts: dict[str, int] = field(default_factory=dict)
    _ran: list[str] = field(default_factory=list)

    def check(self, call: Call) -> Verdict:
        """The verdict on ``call``; a call that ran counts toward budgets and ordering afterwards."""
        verdict = self.evaluate(call)
        self.record(call)
        return verdict

    def evaluate(self, call: Call) -> Verdict:
        """The verdict on ``call``, changing nothing (a live check evaluates before the call runs)."""
        violations: list[Finding] = []
        unchecked: list[Finding] = []
        for rule in self.policy.rules:
            if not _applies(rule, call):
                continue
            reason = self._problem(rule, call, unchecked)
            if reason is not None:
                violations.append(Finding(rule.id, _kind(rule), reason))
        return Verdict(tuple(violations), tuple(unchecked))

    def record(self, call: Call) -> None:
        """Count ``call`` toward budgets and ordering, if it ran."""
        if not call.ran:
            return
        self._ran.append(call.tool)
        for rule in self.policy.rules:
            if isinstance(rule, BudgetRule) and _applies(rule, call) and fnmatchcase(call.tool, rule.tool):
                self._counts[rule.id] = self._counts.get(rule.id, 0) + 1

    def _problem(self, rule: Rule, call: Call, unchecked: list[Finding]) -> str | None:
        tool = call.tool
        if isinstance(rule, ToolsRule):
            if _matches(tool, rule.deny):
                return f"tool {tool!r} is denied{_scope(rule)}"
            if rule.allow is not None and not _matches(tool, rule.allow):
                return f"tool {tool!r} is not among the allowed tools{_scope(rule)}"
            return None
        if isinstance(rule, ArgumentRule):
            if not fnmatchcase(tool, rule.tool):
                return None
            if not call.arguments_recorded:
                unchecked.append(
                    Finding(rule.id, "arguments", f"arguments of {tool!r} were not recorded (capture off?)")
                )
                return None
            return _argument_problem(rule, call.arguments)
        if isinstance(rule, ApprovalRule):
            if _matches(tool, rule.tools) and not call.approved:
                return f"tool {tool!r} {'ran' if call.ran else 'was called'} without an approval"
            return None
        if isinstance(rule, BudgetRule):
            if not fnmatchcase(tool, rule.tool):
                return None
            used = self._counts.get(rule.id, 0)
            if used >= rule.max_calls:
                what = "tool calls" if rule.tool == "*" else f"calls of {rule.tool!r}"
                return f"call {used + 1} of the {what} in this run; the budget is {rule.max_calls}"
            return None
        if fnmatchcase(tool, rule.forbid) and not (rule.unless_approved and call.approved):
            earlier = next((t for t in self._ran if fnmatchcase(t, rule.after)), None)
            if earlier is not None:
                unless = " without an approval" if rule.unless_approved else ""
                return f"tool {tool!r} ran after {earlier!r} in the same run{unless}"
        return None


def _scope(rule: Rule) -> str:
    return f" for agent {', '.join(rule.agents)}" if rule.agents else ""


def _kind(rule: Rule) -> str:
    if isinstance(rule, ToolsRule):
        return "tools"
    if isinstance(rule, ArgumentRule):
        return "arguments"
    if isinstance(rule, ApprovalRule):
        return "approval"
    if isinstance(rule, BudgetRule):
        return "budget"
    assert isinstance(rule, OrderRule)
    return "order"
