"""Tool-call policies: which tools an agent may call, with which arguments, how often, in which order, and
which need an approval first.

The checker is neutral: it imports neither the instrumentation nor the bridge. ``toolspan audit`` checks
recorded traces with it (``toolspan.bridge.views.audit``); the format of a policy is in
``toolspan.policy._model``, how a file is read in ``_files`` (JSON) and ``_yaml``, and its JSON Schema in
``toolspan/policy/schemas/policy.schema.json``.
"""

from __future__ import annotations

from toolspan.errors import PatternError, PolicyError
from toolspan.policy._engine import (
    UNKNOWN,
    Call,
    Checker,
    Finding,
    PartialArray,
    PartialObject,
    Verdict,
    rule_kind,
)
from toolspan.policy._files import load_policy
from toolspan.policy._model import (
    ApprovalRule,
    ArgumentRule,
    BudgetRule,
    OrderRule,
    Policy,
    Rule,
    ToolsRule,
    parse_policy,
)
from toolspan.policy._patterns import Pattern, compile_pattern

__all__ = [
    "UNKNOWN",
    "ApprovalRule",
    "ArgumentRule",
    "BudgetRule",
    "Call",
    "Checker",
    "Finding",
    "OrderRule",
    "PartialArray",
    "PartialObject",
    "Pattern",
    "PatternError",
    "Policy",
    "PolicyError",
    "Rule",
    "ToolsRule",
    "Verdict",
    "compile_pattern",
    "load_policy",
    "parse_policy",
    "rule_kind",
]
