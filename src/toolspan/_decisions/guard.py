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
from fnmatch import fnmatchcase
from typing import Final

from opentelemetry import trace as trace_api

from toolspan import semconv
from toolspan._instrument.context import current_agents, own_tool_span
from toolspan._instrument.info import Arguments
from toolspan._instrument.outcome import ToolDenied
from toolspan._instrument.permissions import record_permission_decided
from toolspan._util.words import DENY
from toolspan.policy import ApprovalRule, BudgetRule, Call, Checker, Finding, OrderRule, Policy

__all__ = ["PolicyGuard"]

_logger = logging.getLogger(__name__)
_MAX_RUNS: Final = 4096  # checkers kept for the runs (traces) that called a tool most recently


class PolicyGuard:
    """Checks every tool call of the process against ``policy``, with one checker per run (its budgets and
    order so far) kept until the run ends (``run_ended``: its root span ended in this process).

    At most ``_MAX_RUNS`` checkers are held: past that, the run idle the longest is forgotten, and the guard
    remembers that it forgot it. A later call of a forgotten run fails closed: every rule that needs the run's
    record (a budget, an order rule) and applies to the call denies it, as it cannot be checked; the other
    rules are judged as ever. A run whose root ends in this process is dropped (and never counts as
    forgotten); one whose root is in another process (a remote parent) is forgotten only past
    ``_MAX_RUNS``."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._runs: OrderedDict[int, Checker] = OrderedDict()
        self._forgotten: set[int] = set()
        self._lock = threading.Lock()
        self._deferrable = {r.id for r in policy.rules if isinstance(r, ApprovalRule)} | {
            r.id for r in policy.rules if isinstance(r, OrderRule) and r.unless_approved
        }
        self._stateful = [r for r in policy.rules if isinstance(r, BudgetRule | OrderRule)]

    def _checker(self, run: int) -> Checker:
        checker = self._runs.get(run)
        if checker is None:
            checker = self._runs[run] = Checker(self.policy)
            if len(self._runs) > _MAX_RUNS:
                gone, _ = self._runs.popitem(last=False)
                if self._stateful:  # (a policy without budgets or order rules forgets nothing that counts)
                    self._forgotten.add(gone)
        else:
            self._runs.move_to_end(run)
        return checker

    def run_ended(self, trace_id: int) -> None:
        """The run ``trace_id`` ended (its root span ended here): its record is dropped."""
        with self._lock:
            self._runs.pop(trace_id, None)
            self._forgotten.discard(trace_id)

    def _forgotten_findings(self, call: Call) -> list[Finding]:
        """The rules a call of a forgotten run cannot be checked against (they need the run's record)."""
        out = []
        for rule in self._stateful:
            if isinstance(rule, BudgetRule):
                applies = fnmatchcase(call.tool, rule.tool)
            else:
                applies = fnmatchcase(call.tool, rule.forbid) and not (rule.unless_approved and call.approved)
            if applies and (
                not rule.agents or any(fnmatchcase(a, p) for a in call.agents for p in rule.agents)
            ):
                out.append(
                    Finding(
                        rule.id,
                        "budget" if isinstance(rule, BudgetRule) else "order",
                        f"this run's record was dropped (over {_MAX_RUNS} runs called tools since its last"
                        " call): its budgets and order cannot be checked",
                    )
                )
        return out

    def check(
        self,
        name: str,
        arguments: Arguments,
        *,
        approver: bool,
        approved: bool,
        final: bool,
        edited: Arguments | None = None,
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
                run = ctx.trace_id if ctx.is_valid else 0
                checker = self._checker(run)
                verdict = checker.evaluate(call)
                forgotten = self._forgotten_findings(call) if run in self._forgotten else []
                blocking = [
                    f
                    for f in (*verdict.violations, *verdict.unchecked, *forgotten)
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
            record_permission_decided(DENY, note=note, by="policy")
        raise ToolDenied(note)
