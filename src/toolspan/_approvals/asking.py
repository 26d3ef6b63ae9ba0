"""Asking the approver of ``run_tool_calls``: step 2 of the decision chain (``toolspan._decisions.chain``).

The ``approve`` callback runs inside the tool's span, records ``permission_required`` /
``permission_decided`` (who decided, the wait, the note), and a denied call raises ``ToolDenied`` before the
tool body runs. An ``Approval`` with ``arguments`` runs the body with those edited arguments (the span keeps
the model's arguments and records the edit; the policy checks the edit too); an approver that gives no answer
within ``approve_timeout`` seconds denies the call with ``by="timeout"``.

An approval request belongs to one call: the first tool call in the context ``run_tool_calls`` sets up
claims it, and a tool called from that call's body (or from a thread it starts) finds it claimed: it is not
approved by its caller's approver. An answer is read strictly: ``True`` allows, ``False`` denies, an
``Approval`` decides by its ``decision`` (``"allow"`` or ``"deny"``, the string itself: another word is a
``DecisionError``), and anything else (an object that claims to equal everything included) denies, with the
reason."""

from __future__ import annotations

import asyncio
import contextvars
import copy
import inspect
import itertools
import logging
import math
import threading
import time
from collections.abc import Awaitable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from toolspan._approvals.approval import DEFAULT_DENY_NOTE, Approval, Approver, ToolCall
from toolspan._instrument import permissions as _permissions
from toolspan._instrument.outcome import ToolDenied
from toolspan._util.words import ALLOW, DENY, parse_decision

_logger = logging.getLogger(__name__)

__all__ = [
    "APPROVAL",
    "ApprovalRequest",
    "abandoned",
    "ask_async",
    "ask_sync",
    "check_timeout",
    "claim",
    "run_blocking",
]

TIMEOUT_BY = "timeout"


class _Verdict(NamedTuple):
    decision: str
    note: str | None
    by: str | None
    arguments: dict[str, Any] | None = None
    required_ns: int | None = None


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def run_blocking(awaitable: Awaitable[Any]) -> Any:
    """Run ``awaitable`` to completion from sync code: here if no loop runs, else in a helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(awaitable))
    ctx = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(ctx.run, asyncio.run, _await(awaitable)).result()


@dataclass(frozen=True)
class ApprovalRequest:
    """One tool call waiting for the ``approve`` callback of ``run_tool_calls``."""

    approve: Approver
    call: ToolCall
    loop: asyncio.AbstractEventLoop | None  # the loop of arun_tool_calls, for async approvers
    timeout: float | None = None  # seconds the approver has; then the call is denied (by "timeout")
    # Claimed by the first tool call that reaches it (``claim``): next() of a fresh count is 0 exactly once.
    _claims: itertools.count[int] = field(default_factory=itertools.count, repr=False, compare=False)

    def claim(self) -> bool:
        """Whether this is the first claim of the request (atomic: one call gets it)."""
        return next(self._claims) == 0


def check_timeout(timeout: Any) -> float | None:
    """``approve_timeout`` validated: ``None``, or a finite number of seconds > 0 a thread can wait."""
    if timeout is None:
        return None
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or not 0 < timeout <= threading.TIMEOUT_MAX
    ):
        raise ValueError(
            "approve_timeout must be a positive, finite number of seconds"
            f" (at most {threading.TIMEOUT_MAX:g}) or None, got {timeout!r:.40}"
        )
    return float(timeout)


# The approval of the call being run; set by the runner around each call, read by the gate.
APPROVAL: contextvars.ContextVar[ApprovalRequest | None] = contextvars.ContextVar(
    "toolspan_approval", default=None
)


# Set once the call stopped waiting for the approver (approve_timeout): a polling approver may give up.
_ABANDONED: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "toolspan_approval_abandoned", default=None
)


def abandoned() -> bool:
    """Inside an approver: whether the call already stopped waiting for it (``approve_timeout``)."""
    flag = _ABANDONED.get()
    return flag is not None and flag.is_set()


def _brief(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"a {type(value).__name__}"
    return text if len(text) <= 80 else text[:79] + "\u2026"


def _normalize(value: Any) -> _Verdict:
    """The approver's answer, read strictly: ``True``, ``False``, or an ``Approval`` (its ``decision`` the
    string ``"allow"`` or ``"deny"`` itself)."""
    # Identity and exact types only: an object whose __eq__ says yes to everything is no answer.
    if value is True or value is False:
        return _Verdict(ALLOW if value else DENY, None, None)
    if type(value) is not Approval or type(value.decision) is not str:
        raise ValueError(f"approve returned {_brief(value)}; expected True, False or an Approval")
    decision = parse_decision(value.decision, "Approval.decision")  # a word it is not: DecisionError
    arguments = value.arguments
    if arguments is not None and not isinstance(arguments, Mapping):
        raise ValueError(f"Approval.arguments must be a mapping, got {type(arguments).__name__}")
    if arguments is not None and not all(type(k) is str for k in arguments):
        raise ValueError("Approval.arguments must be keyed by parameter names (strings)")
    return _Verdict(
        decision,
        None if value.note is None else str(value.note),
        None if value.by is None else str(value.by),
        # A copy of its own: the approver (or a thread of its) changing its dict later changes nothing.
        None if arguments is None else copy.deepcopy(dict(arguments)),
        value.required_ns,
    )


def _failed_approval(exc: BaseException) -> _Verdict:
    if abandoned():  # the call already went on without this approver: nothing to warn about
        _logger.debug("toolspan: an abandoned approver ended: %s", exc)
    else:
        _logger.warning("toolspan: approve raised; the tool call is denied", exc_info=exc)
    return _Verdict(DENY, f"approval failed: {type(exc).__name__}: {exc}", None)


def _timed_out(timeout: float) -> _Verdict:
    _logger.warning("toolspan: no approval decision within %s s; the tool call is denied", timeout)
    return _Verdict(DENY, f"no decision within {timeout:g} s", TIMEOUT_BY)


def _ask_sync(approval: ApprovalRequest) -> _Verdict:
    try:
        value = approval.approve(approval.call)
        if inspect.isawaitable(value):
            loop = approval.loop
            if loop is not None and loop.is_running():
                value = asyncio.run_coroutine_threadsafe(_await(value), loop).result()
            else:
                value = run_blocking(value)
        return _normalize(value)
    except Exception as exc:
        return _failed_approval(exc)


def _decide_sync(approval: ApprovalRequest) -> _Verdict:
    timeout = approval.timeout
    if timeout is None:
        return _ask_sync(approval)
    # The approver runs in a daemon thread (same context) so the call can stop waiting for it; an approver
    # that answers late is ignored.
    future: Future[_Verdict] = Future()
    flag = threading.Event()
    ctx = contextvars.copy_context()
    ctx.run(_ABANDONED.set, flag)

    def ask() -> None:
        future.set_result(ctx.run(_ask_sync, approval))

    threading.Thread(target=ask, name="toolspan-approve", daemon=True).start()
    try:
        return future.result(timeout)
    except FutureTimeout:
        flag.set()
        return _timed_out(timeout)


async def _ask_async(approval: ApprovalRequest) -> _Verdict:
    try:
        if _is_async_callable(approval.approve):
            value = approval.approve(approval.call)
        else:
            # A sync approver may wait (for a person, a file, an approval book): never on the event loop.
            value = await asyncio.to_thread(approval.approve, approval.call)
        if inspect.isawaitable(value):
            value = await value
        return _normalize(value)
    except Exception as exc:
        return _failed_approval(exc)


def _is_async_callable(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


async def _decide_async(approval: ApprovalRequest) -> _Verdict:
    timeout = approval.timeout
    if timeout is None:
        return await _ask_async(approval)
    flag = threading.Event()
    token = _ABANDONED.set(flag)  # copied into the task wait_for runs (and into its worker thread)
    try:
        return await asyncio.wait_for(_ask_async(approval), timeout)
    except asyncio.TimeoutError:
        flag.set()
        return _timed_out(timeout)
    finally:
        _ABANDONED.reset(token)


def _record(decision: _Verdict, required_ns: int) -> dict[str, object] | None:
    """Record the decision; raise ``ToolDenied`` for a denial; return the edited arguments, if any."""
    # The wait, from permission_required (or from the wait before a restart) to this event's time.
    since = required_ns if decision.required_ns is None else min(required_ns, decision.required_ns)
    now = time.time_ns()
    allowed = decision.decision == ALLOW
    if allowed and decision.arguments is not None:
        # Before the decision, whose record refreshes the pending span: the act re-sent then carries the edit.
        _permissions.record_edited_arguments(decision.arguments)
    _permissions.record_permission_decided(
        decision.decision,
        note=decision.note,
        by=decision.by,
        latency_ms=max(0, now - since) // 1_000_000,
        timestamp=now,
    )
    if not allowed:
        raise ToolDenied(decision.note or DEFAULT_DENY_NOTE)
    return decision.arguments


def claim() -> ApprovalRequest | None:
    """The approval request of the current context, if this call is the first to reach it."""
    request = APPROVAL.get()
    if request is None or not request.claim():
        return None
    return request


def ask_sync(request: ApprovalRequest, parameters: str | None = None) -> dict[str, object] | None:
    """Ask ``request``'s approver (sync code); ``ToolDenied`` unless allowed; the edited arguments, if any.
    ``parameters``: the JSON Schema of the tool's parameters, recorded with the request."""
    required_ns = time.time_ns()
    _permissions.record_permission_required(timestamp=required_ns, parameters=parameters)
    return _record(_decide_sync(request), required_ns)


async def ask_async(request: ApprovalRequest, parameters: str | None = None) -> dict[str, object] | None:
    """``ask_sync`` for async code: an async approver is awaited, a sync one runs off the event loop."""
    required_ns = time.time_ns()
    _permissions.record_permission_required(timestamp=required_ns, parameters=parameters)
    return _record(await _decide_async(request), required_ns)
