"""Live policy checks: with ``configure(policy=...)`` every tool call is checked against the policy before its
body runs (steps 1 and 3 of the decision chain, ``chain``), with the same checker ``toolspan audit`` uses
offline (``toolspan.policy``).

The guard judges the real call: the arguments the body will receive, as whole JSON values, whatever the
capture settings, the byte budget or the redaction of the recorded copy; and again the arguments an approver
replaced them with. The facts besides: the tool's name, the agents it runs under (through sub-plans too),
and the run (its trace) for budgets and ordering. A check that fails unexpectedly denies the call (rule id
``policy-error``): a policy fails closed. A call that breaks a rule never runs: a ``permission_decided``
event (decision ``deny``, the note naming the policy, rule and reason) and ``toolspan.policy.*`` attributes
go on its span (whatever the capture settings: rule ids are not content), and ``ToolDenied`` is raised, so
the span ends ``DENIED`` and ``run_tool_calls`` answers the model with an error result. Auditing that trace
offline lists the same rules for that call, as denied (``enforced``).

Rules an approver can satisfy (``approval``, and ``order`` with ``unless_approved``) wait for the approver
of this very call (``run_tool_calls(approve=...)``); a call without one, a tool called from an approved
tool's body included, is denied by them.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any, Final

from opentelemetry import trace as trace_api

from toolspan import semconv
from toolspan._instrument.context import current_agents, own_tool_span
from toolspan._instrument.outcome import ToolDenied
from toolspan._instrument.permissions import record_permission_decided
from toolspan.policy import ApprovalRule, Call, Checker, Finding, OrderRule, Policy

__all__ = ["PolicyGuard"]

_logger = logging.getLogger(__name__)
_MAX_RUNS: Final = 4096  # checkers kept for the most recent runs (traces)


class PolicyGuard:
    """Checks every tool call of the process against ``policy`` (one checker per run, the newest kept)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._runs: OrderedDict[int, Checker] = OrderedDict()
        self._lock = threading.Lock()
        self._deferrable = {r.id for r in policy.rules if isinstance(r, ApprovalRule)} | {
            r.id for r in policy.rules if isinstance(r, OrderRule) and r.unless_approved
        }

    def _checker(self, run: int) -> Checker:
        checker = self._runs.get(run)
        if checker is None:
            checker = self._runs[run] = Checker(self.policy)
            if len(self._runs) > _MAX_RUNS:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(run)
        return checker

    def check(
        self, name: str, arguments: Any, *, approver: bool, approved: bool, final: bool, edited: Any = None
    ) -> None:
        """Raise ``ToolDenied`` if the call of tool ``name`` with ``arguments`` breaks a rule.

        ``approver``: this call has an approver still to ask (rules it can satisfy wait for it);
        ``approved``: its approver allowed it; ``edited``: the arguments the approver replaced ``arguments``
        with (checked too); ``final``: the body receives these, so an allowed call is counted for budgets
        and ordering."""
        span = trace_api.get_current_span()
        ctx = span.get_span_context()
        own = own_tool_span() is not None
        call = Call(
            tool=name,
            agents=current_agents(),
            arguments=arguments,
            approved=approved,
            edited_arguments=edited,
        )
        try:
            with self._lock:
                checker = self._checker(ctx.trace_id if ctx.is_valid else 0)
                verdict = checker.evaluate(call)
                blocking = [
                    f
                    for f in (*verdict.violations, *verdict.unchecked)
                    if not (approver and not approved and f.rule_id in self._deferrable)
                ]
                if not blocking:
                    if final:
                        checker.record(call)
                    return
        except Exception as exc:  # a policy fails closed: the call is denied, and says why
            _logger.warning(
                "toolspan: the policy check of %s failed; the call is denied", name, exc_info=True
            )
            blocking = [
                Finding("policy-error", "error", f"the policy check failed: {type(exc).__name__}: {exc}")
            ]
        self._deny(span if own else None, blocking)

    def _deny(self, span: trace_api.Span | None, findings: list[Finding]) -> None:
        first = findings[0]
        note = f"policy {self.policy.id} rule {first.rule_id}: {first.reason}"
        if span is not None and span.is_recording():
            span.set_attributes(
                {
                    semconv.TOOLSPAN_POLICY_ID: self.policy.id,
                    semconv.TOOLSPAN_POLICY_VERSION: self.policy.version,
                    semconv.TOOLSPAN_POLICY_RULES: [f.rule_id for f in findings],
                }
            )
            record_permission_decided("deny", note=note, by="policy")
        raise ToolDenied(note)
