"""Live policy checks: with ``configure(policy=...)`` every tool call is checked against the policy before its
body runs, with the same checker ``toolspan audit`` uses offline (``toolspan.policy``).

The facts of a call are those the audit reads back from its span: the tool's name, the agents it runs under
(through sub-plans too), its arguments as toolspan records them, and the run (its trace) for budgets and
ordering. A check that fails unexpectedly denies the call (rule id ``policy-error``): a policy fails
closed. A call that breaks a rule never runs: a ``permission_decided`` event (decision ``deny``, the note
naming the policy, rule and reason) and ``toolspan.policy.*`` attributes go on its span, and
``ToolDenied`` is raised, so the span ends ``DENIED`` and ``run_tool_calls`` answers the model with an error
result. Auditing that trace offline lists the same rules for that call, as denied (``enforced``).

Rules an approver can satisfy (``approval``, and ``order`` with ``unless_approved``) let the call through
to the approver when ``run_tool_calls(approve=...)`` runs it; without one they deny.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

from opentelemetry import trace as trace_api

from toolspan import _intercept, semconv
from toolspan._approvals import APPROVAL
from toolspan._context import current_agents
from toolspan._outcome import ToolDenied
from toolspan._permissions import record_permission_decided
from toolspan.policy import Call, Checker, Finding, Policy
from toolspan.policy._model import ApprovalRule, OrderRule

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

    def check(self, info: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Raise ``ToolDenied`` if the call breaks a rule; else count it for its run."""
        span = trace_api.get_current_span()
        ctx = span.get_span_context()
        own = _intercept.own_tool_span() is not None
        try:
            arguments, recorded = _intercept.call_arguments(info, instance, args, kwargs), True
        except Exception:
            _logger.warning("toolspan: could not read the arguments of %s for the policy", info.name)
            arguments, recorded = None, False
        call = Call(tool=info.name, agents=current_agents(), arguments=arguments, arguments_recorded=recorded)
        approver = APPROVAL.get() is not None
        try:
            with self._lock:
                checker = self._checker(ctx.trace_id if ctx.is_valid else 0)
                verdict = checker.evaluate(call)
                blocking = [f for f in verdict.violations if not (approver and f.rule_id in self._deferrable)]
                if not blocking:
                    checker.record(call)
                    return
        except Exception as exc:  # a policy fails closed: the call is denied, and says why
            _logger.warning(
                "toolspan: the policy check of %s failed; the call is denied", info.name, exc_info=True
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

    def stand_in(
        self, info: Any, wrapped: Callable[..., Any], instance: Any, kind: str
    ) -> Callable[..., Any]:
        def decide(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            self.check(info, instance, args, kwargs)  # raises ToolDenied; else the body runs

        return _intercept.body_stand_in(kind, wrapped, decide)
