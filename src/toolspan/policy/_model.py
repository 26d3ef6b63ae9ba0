"""Policy documents: parsing and validation, with errors that name the file and the field.

A policy is ``{"id", "version", "description"?, "rules": [...]}``; every rule has a unique ``id``, a ``kind``
and, optionally, ``agent`` (a name or a list of names and glob patterns: the rule applies to tool calls made
under one of those agents, in the agent itself or in any sub-plan it started). The kinds:

- ``tools``: ``allow`` and/or ``deny``, lists of tool-name glob patterns;
- ``arguments``: ``tool`` (glob), ``path`` (dotted path into the arguments, list indices as ASCII numbers, at
  most 32 segments) and at least one check: ``pattern`` / ``not_pattern`` (RE2 regular expressions, searched
  in linear time: ``pattern`` must match every text of the value, ``not_pattern`` no text of it; the texts of
  a string are itself, of a number, boolean or null its JSON text, of a list or object every such text inside
  it, object keys included for ``not_pattern``), ``min`` / ``max`` (numbers), ``max_length`` (strings, lists
  and objects), ``enum`` (allowed values, compared by JSON type and value: ``1`` is neither ``true`` nor
  ``1.0``), ``required`` (the path must exist);
- ``approval``: ``tools`` (globs) that need an explicit allow decision before they run;
- ``budget``: ``max_calls`` per run (one trace), of the calls matching ``tool`` (glob, default every tool);
- ``order``: ``forbid`` (glob) must not run after ``after`` (glob) ran in the same run, unless the later call
  was approved (``unless_approved``, default true).

A policy document is nested at most ``MAX_DEPTH`` deep; a policy file (``_files``) is bounded too. Every
problem is a ``PolicyError`` naming the file, the line where known, and the field.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from toolspan.errors import PolicyError
from toolspan.policy._patterns import Pattern, PatternError, compile_pattern

__all__ = [
    "MAX_DEPTH",
    "MAX_PATH_SEGMENTS",
    "ApprovalRule",
    "ArgumentRule",
    "BudgetRule",
    "OrderRule",
    "Policy",
    "PolicyError",
    "Rule",
    "ToolsRule",
    "parse_policy",
]


MAX_DEPTH: Final = 32  # nesting of the document (and of an enum value)
MAX_PATH_SEGMENTS: Final = 32


@dataclass(frozen=True, slots=True)
class _Base:
    id: str
    agents: tuple[str, ...]
    description: str


@dataclass(frozen=True, slots=True)
class ToolsRule(_Base):
    allow: tuple[str, ...] | None
    deny: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ArgumentRule(_Base):
    tool: str
    path: tuple[str | int, ...]
    pattern: Pattern | None
    not_pattern: Pattern | None
    min: float | None
    max: float | None
    max_length: int | None
    enum: tuple[Any, ...] | None
    required: bool


@dataclass(frozen=True, slots=True)
class ApprovalRule(_Base):
    tools: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class BudgetRule(_Base):
    tool: str
    max_calls: int


@dataclass(frozen=True, slots=True)
class OrderRule(_Base):
    after: str
    forbid: str
    unless_approved: bool


Rule: TypeAlias = ToolsRule | ArgumentRule | ApprovalRule | BudgetRule | OrderRule


@dataclass(frozen=True, slots=True)
class Policy:
    id: str
    version: str
    description: str
    rules: tuple[Rule, ...]


_COMMON: Final = frozenset({"id", "kind", "agent", "description"})
_FIELDS: Final[Mapping[str, frozenset[str]]] = {
    "tools": frozenset({"allow", "deny"}),
    "arguments": frozenset(
        {"tool", "path", "pattern", "not_pattern", "min", "max", "max_length", "enum", "required"}
    ),
    "approval": frozenset({"tools"}),
    "budget": frozenset({"tool", "max_calls"}),
    "order": frozenset({"after", "forbid", "unless_approved"}),
}
_ARG_CHECKS: Final = ("pattern", "not_pattern", "min", "max", "max_length", "enum", "required")


class _Fields:
    """Typed access to one mapping of the document; every error names ``where`` and the field."""

    def __init__(self, data: Mapping[str, Any], where: str) -> None:
        self.data = data
        self.where = where

    def fail(self, key: str, message: str) -> PolicyError:
        return PolicyError(f"{self.where}.{key}: {message}" if key else f"{self.where}: {message}")

    def text(self, key: str, *, required: bool = False, default: str = "") -> str:
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.fail(key, "required")
            return default
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.fail(key, f"expected a string, got {type(value).__name__}")
        text = str(value)
        if required and not text.strip():
            raise self.fail(key, "must not be empty")
        return text

    def names(self, key: str, *, required: bool = False) -> tuple[str, ...] | None:
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.fail(key, "required")
            return None
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(v, str) and v for v in items):
            raise self.fail(key, "expected a name or a list of names (glob patterns allowed)")
        return tuple(items)

    def number(self, key: str) -> float | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, f"expected a number, got {brief(value)}")
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise self.fail(key, f"expected a finite number (at most 1.8e308 in size), got {brief(value)}")
        return number

    def count(self, key: str, *, required: bool = False) -> int | None:
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.fail(key, "required")
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_COUNT:
            raise self.fail(key, f"expected a whole number from 0 to {_MAX_COUNT}, got {brief(value)}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {brief(value)}")
        return value

    def regex(self, key: str) -> Pattern | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail(key, "expected a regular expression string")
        try:
            return compile_pattern(value)
        except PatternError as e:
            raise self.fail(key, str(e)) from None


_MAX_COUNT: Final = 1 << 53  # whole numbers a JSON reader anywhere keeps exact


def brief(value: Any, limit: int = 60) -> str:
    """``repr(value)`` on one line, at most ``limit`` characters (a hostile policy's value is never echoed
    whole; a huge integer is not even converted to text)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of {value.bit_length()} bits"
    try:
        text = repr(value)
    except Exception:
        return f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _path(fields: _Fields) -> tuple[str | int, ...]:
    raw = fields.text("path", required=True)
    parts: list[str | int] = []
    for part in raw.split("."):
        if not part:
            raise fields.fail("path", f"empty segment in {brief(raw)}")
        # Only ASCII digits are a list index: "\u00b2" and "\u0663" are keys, as the arguments spell them.
        parts.append(int(part) if part.isascii() and part.isdigit() else part)
    if len(parts) > MAX_PATH_SEGMENTS:
        raise fields.fail("path", f"{len(parts)} segments; at most {MAX_PATH_SEGMENTS}")
    return tuple(parts)


def _depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects (iterative: any depth is measured, never recursed)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            return depth
        if isinstance(item, Mapping):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def _tools_rule(fields: _Fields, data: Mapping[str, Any], common: dict[str, Any]) -> Rule:
    allow, deny = fields.names("allow"), fields.names("deny")
    if allow is None and deny is None:
        raise fields.fail("", "a 'tools' rule needs 'allow' or 'deny'")
    return ToolsRule(**common, allow=allow, deny=deny or ())


def _arguments_rule(fields: _Fields, data: Mapping[str, Any], common: dict[str, Any]) -> Rule:
    if not any(k in data for k in _ARG_CHECKS):
        raise fields.fail("", f"an 'arguments' rule needs one of {', '.join(_ARG_CHECKS)}")
    enum = data.get("enum")
    if enum is not None and not isinstance(enum, list):
        raise fields.fail("enum", "expected a list of allowed values")
    if enum is not None and _depth(enum) > MAX_DEPTH:
        raise fields.fail("enum", f"nested deeper than {MAX_DEPTH}")
    tool = fields.names("tool", required=True)
    assert tool is not None
    if len(tool) != 1:
        raise fields.fail("tool", "expected one tool name or glob pattern")
    return ArgumentRule(
        **common,
        tool=tool[0],
        path=_path(fields),
        pattern=fields.regex("pattern"),
        not_pattern=fields.regex("not_pattern"),
        min=fields.number("min"),
        max=fields.number("max"),
        max_length=fields.count("max_length"),
        enum=None if enum is None else tuple(enum),
        required=fields.flag("required", False),
    )


def _approval_rule(fields: _Fields, data: Mapping[str, Any], common: dict[str, Any]) -> Rule:
    tools = fields.names("tools", required=True)
    assert tools is not None
    return ApprovalRule(**common, tools=tools)


def _budget_rule(fields: _Fields, data: Mapping[str, Any], common: dict[str, Any]) -> Rule:
    max_calls = fields.count("max_calls", required=True)
    assert max_calls is not None
    return BudgetRule(**common, tool=fields.text("tool", default="*"), max_calls=max_calls)


def _order_rule(fields: _Fields, data: Mapping[str, Any], common: dict[str, Any]) -> Rule:
    return OrderRule(
        **common,
        after=fields.text("after", required=True),
        forbid=fields.text("forbid", required=True),
        unless_approved=fields.flag("unless_approved", True),
    )


# Each kind's rule, from its fields, the rule's data and the fields every rule has (id, agents, description).
_RULES: Final[Mapping[str, Callable[[_Fields, Mapping[str, Any], dict[str, Any]], Rule]]] = {
    "tools": _tools_rule,
    "arguments": _arguments_rule,
    "approval": _approval_rule,
    "budget": _budget_rule,
    "order": _order_rule,
}


def _rule(data: Any, where: str) -> Rule:
    if not isinstance(data, Mapping):
        raise PolicyError(f"{where}: expected an object")
    fields = _Fields(data, where)
    rule_id = fields.text("id", required=True)
    kind = fields.text("kind", required=True)
    if kind not in _FIELDS:
        raise fields.fail("kind", f"unknown kind {kind!r}; expected one of {', '.join(sorted(_FIELDS))}")
    unknown = sorted(set(data) - _COMMON - _FIELDS[kind])
    if unknown:
        raise fields.fail(unknown[0], f"unknown field for a {kind!r} rule")
    common = {"id": rule_id, "agents": fields.names("agent") or (), "description": fields.text("description")}
    return _RULES[kind](fields, data, common)


def parse_policy(data: Any, source: str = "policy") -> Policy:
    """A ``Policy`` from a decoded document; ``source`` names it in error messages. Anything unusable is a
    ``PolicyError``, whatever the document holds."""
    try:
        return _parse_policy(data, source)
    except PolicyError:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as e:
        raise PolicyError(
            f"{source}: not a usable policy: {type(e).__name__}: {brief(str(e), 200)}"
        ) from None


def _parse_policy(data: Any, source: str) -> Policy:
    if isinstance(data, Mapping) and _depth(data) > MAX_DEPTH:
        raise PolicyError(f"{source}: nested deeper than {MAX_DEPTH}")
    if not isinstance(data, Mapping):
        raise PolicyError(f"{source}: expected a policy object at the top level")
    fields = _Fields(data, source)
    unknown = sorted(set(data) - {"id", "version", "description", "rules", "$schema"})
    if unknown:
        raise fields.fail(unknown[0], "unknown field")
    rules_data = data.get("rules")
    if not isinstance(rules_data, list):
        raise fields.fail("rules", "required: a list of rules")
    rules = tuple(_rule(r, f"{source}: rules[{i}]") for i, r in enumerate(rules_data))
    seen: set[str] = set()
    for i, rule in enumerate(rules):
        if rule.id in seen:
            raise PolicyError(f"{source}: rules[{i}].id: duplicate rule id {rule.id!r}")
        seen.add(rule.id)
    return Policy(
        id=fields.text("id", required=True),
        version=fields.text("version", required=True),
        description=fields.text("description"),
        rules=rules,
    )
