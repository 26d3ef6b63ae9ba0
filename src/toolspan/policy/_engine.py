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
    MAX_DEPTH,
    ApprovalRule,
    ArgumentRule,
    BudgetRule,
    OrderRule,
    Policy,
    Rule,
    ToolsRule,
)

__all__ = ["UNKNOWN", "Call", "Checker", "Finding", "PartialArray", "PartialObject", "Verdict", "rule_kind"]

_MISSING: Final = object()


class _Unknown:
    """A value the record does not hold: cut at the byte budget or redacted when it was captured."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Final = _Unknown()


class PartialObject(dict[str, Any]):
    """An object that lost entries when it was captured: a key it lacks may have been there."""


class PartialArray(list[Any]):
    """An array that lost its last items when it was captured."""


@dataclass(frozen=True, slots=True)
class Call:
    """What the checker needs of one tool call.

    ``agents``: the names of the agents the call runs under, outermost first (through sub-plans too);
    ``arguments``: the arguments (JSON values): a live check passes the values the body receives, whole; an
    audit passes what the span recorded, with ``UNKNOWN``, ``PartialObject`` and ``PartialArray`` standing
    where the record was cut or redacted; ``None`` with ``arguments_recorded=False`` when they were not
    captured. ``edited_arguments``: the arguments an approver replaced them with (the body received these;
    both sets are checked). ``approved``: an explicit allow decision was recorded for this call; ``ran``:
    the call's body ran (false for a denied call).
    """

    tool: str
    agents: tuple[str, ...] = ()
    arguments: Any = None
    arguments_recorded: bool = True
    approved: bool = False
    ran: bool = True
    edited_arguments: Any = None


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
        if value is UNKNOWN:
            return UNKNOWN
        if isinstance(part, int) and isinstance(value, list):
            if part < len(value):
                value = value[part]
            else:
                return UNKNOWN if isinstance(value, PartialArray) else _MISSING
        elif isinstance(value, dict):
            key = str(part)
            if key in value:
                value = value[key]
            else:
                return UNKNOWN if isinstance(value, PartialObject) else _MISSING
        else:
            return _MISSING
    return value


def _scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool):
        return "null" if value is None else ("true" if value else "false")
    try:
        return json.dumps(value)
    except (ValueError, TypeError):
        return repr(value)


def _texts(value: Any, keys: bool) -> tuple[list[str], bool]:
    """The texts of ``value`` (see the policy format) and whether part of it is unknown."""
    texts: list[str] = []
    unknown = False
    stack = [value]
    while stack:
        item = stack.pop()
        if item is UNKNOWN:
            unknown = True
        elif isinstance(item, dict):
            unknown = unknown or isinstance(item, PartialObject)
            if keys:
                texts.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            unknown = unknown or isinstance(item, PartialArray)
            stack.extend(item)
        else:
            texts.append(_scalar_text(item))
    return texts, unknown


def _has_unknown(value: Any) -> bool:
    return _texts(value, False)[1]


def _same(a: Any, b: Any, depth: int = 0) -> bool:
    """JSON equality: same type and value (``1`` is neither ``true`` nor ``1.0``)."""
    if type(a) is not type(b) or depth > MAX_DEPTH + 1:
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], depth + 1) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y, depth + 1) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _show(value: Any, limit: int = 80) -> str:
    if isinstance(value, str) and len(value) > limit:
        value = value[:limit]
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (ValueError, TypeError, RecursionError):
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _argument_problem(rule: ArgumentRule, arguments: Any) -> str | _Unknown | None:
    """Why ``arguments`` break ``rule``, ``None`` when they do not, ``UNKNOWN`` when the record cannot say."""
    where = ".".join(str(p) for p in rule.path)
    value = _lookup(arguments, rule.path)
    if isinstance(value, _Unknown):
        return value
    if value is _MISSING:
        return f"argument {where!r} is missing" if rule.required else None
    unknown = False
    if rule.enum is not None and not any(_same(value, allowed) for allowed in rule.enum):
        if _has_unknown(value):
            unknown = True
        else:
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
    if rule.max_length is not None and isinstance(value, PartialArray | PartialObject):
        unknown = True
    if rule.not_pattern is not None:
        texts, partial = _texts(value, True)
        if any(rule.not_pattern.search(t) for t in texts):
            forbidden = rule.not_pattern.pattern
            return f"argument {where!r} is {_show(value)}, which matches the forbidden {forbidden!r}"
        unknown = unknown or partial
    if rule.pattern is not None:
        texts, partial = _texts(value, False)
        if not all(rule.pattern.search(t) for t in texts):
            return f"argument {where!r} is {_show(value)}, which does not match {rule.pattern.pattern!r}"
        unknown = unknown or partial
    return UNKNOWN if unknown else None


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
                violations.append(Finding(rule.id, rule_kind(rule), reason))
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
            sets = [("", call.arguments)]
            if call.edited_arguments is not None:
                sets.append(("edited ", call.edited_arguments))
            cannot_tell = False
            for label, arguments in sets:
                problem = _argument_problem(rule, arguments)
                if isinstance(problem, str):
                    return label + problem if label else problem
                cannot_tell = cannot_tell or problem is UNKNOWN
            if cannot_tell:
                where = ".".join(str(p) for p in rule.path)
                unchecked.append(
                    Finding(
                        rule.id,
                        "arguments",
                        f"argument {where!r} of {tool!r} was cut or redacted when recorded",
                    )
                )
            return None
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


def rule_kind(rule: Rule) -> str:
    """The ``kind`` of ``rule`` as a policy file names it."""
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
