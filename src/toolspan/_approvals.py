"""Approvals of ``run_tool_calls``: the ``approve`` callback runs inside the tool's span, records
``permission_required`` / ``permission_decided`` (who decided, the wait, the note), and a denied call raises
``ToolDenied`` before the tool body runs. An ``Approval`` with ``arguments`` runs the body with those edited
arguments (the span keeps the model's arguments and records the edit); an approver that gives no answer
within ``approve_timeout`` seconds denies the call with ``by="timeout"``."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, NamedTuple

from toolspan import _permissions, _tool
from toolspan._callshapes import DEFAULT_DENY_NOTE, ToolCall

_logger = logging.getLogger(__name__)

__all__ = [
    "APPROVAL",
    "Approval",
    "ApprovalRequest",
    "Approver",
    "Decision",
    "abandoned",
    "gated",
    "run_blocking",
]

TIMEOUT_BY = "timeout"


@dataclass(frozen=True)
class Approval:
    """An approver's full answer: ``decision`` (``True``/``"allow"`` or ``False``/``"deny"``), a ``note``
    (the reason), ``by`` (who or what decided: a person's id, ``"policy"``, ...) and, to run the tool with
    arguments other than the model's, ``arguments`` (the whole edited argument object)."""

    decision: bool | str
    note: str | None = None
    by: str | None = None
    arguments: Mapping[str, Any] | None = None
    # When the wait began, if before this span (an approval resumed after a restart); else the span's own.
    required_ns: int | None = None


Decision = bool | str | Approval | tuple[bool | str, str | None] | tuple[bool | str, str | None, str | None]
Approver = Callable[[ToolCall], Decision | Awaitable[Decision]]


class _Verdict(NamedTuple):
    decision: str
    note: str | None
    by: str | None
    arguments: dict[str, Any] | None = None
    required_ns: int | None = None


_ALLOW = "allow"
_DENY = "deny"


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


def _verdict(value: Any) -> str:
    if value is True or value == _ALLOW:
        return _ALLOW
    if value is False or value == _DENY:
        return _DENY
    raise ValueError(
        f"approve returned {value!r}; expected a bool, 'allow', 'deny', an Approval, "
        "(decision, note) or (decision, note, by)"
    )


def _normalize(value: Any) -> _Verdict:
    if isinstance(value, Approval):
        arguments = value.arguments
        if arguments is not None and not isinstance(arguments, Mapping):
            raise ValueError(f"Approval.arguments must be a mapping, got {type(arguments).__name__}")
        return _Verdict(
            _verdict(value.decision),
            None if value.note is None else str(value.note),
            None if value.by is None else str(value.by),
            None if arguments is None else dict(arguments),
            value.required_ns,
        )
    note: str | None = None
    by: str | None = None
    if isinstance(value, tuple) and len(value) in (2, 3):
        value, raw_note, *rest = value
        note = None if raw_note is None else str(raw_note)
        by = None if not rest or rest[0] is None else str(rest[0])
    return _Verdict(_verdict(value), note, by)


def _failed_approval(exc: BaseException) -> _Verdict:
    if abandoned():  # the call already went on without this approver: nothing to warn about
        _logger.debug("toolspan: an abandoned approver ended: %s", exc)
    else:
        _logger.warning("toolspan: approve raised; the tool call is denied", exc_info=exc)
    return _Verdict(_DENY, f"approval failed: {type(exc).__name__}: {exc}", None)


def _timed_out(timeout: float) -> _Verdict:
    _logger.warning("toolspan: no approval decision within %s s; the tool call is denied", timeout)
    return _Verdict(_DENY, f"no decision within {timeout:g} s", TIMEOUT_BY)


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


def _record(decision: _Verdict, required_ns: int) -> dict[str, Any] | None:
    """Record the decision; raise ``ToolDenied`` for a denial; return the edited arguments, if any."""
    # The wait, from permission_required (or from the wait before a restart) to this event's time.
    since = required_ns if decision.required_ns is None else min(required_ns, decision.required_ns)
    now = time.time_ns()
    _tool.record_permission_decided(
        decision.decision,
        note=decision.note,
        by=decision.by,
        latency_ms=max(0, now - since) // 1_000_000,
        timestamp=now,
    )
    if decision.decision == _DENY:
        raise _tool.ToolDenied(decision.note or DEFAULT_DENY_NOTE)
    if decision.arguments is not None:
        _permissions.record_edited_arguments(decision.arguments)
    return decision.arguments


def _check_sync() -> dict[str, Any] | None:
    approval = APPROVAL.get()
    if approval is None:
        return None
    required_ns = time.time_ns()
    _tool.record_permission_required(timestamp=required_ns)
    return _record(_decide_sync(approval), required_ns)


async def _check_async() -> dict[str, Any] | None:
    approval = APPROVAL.get()
    if approval is None:
        return None
    required_ns = time.time_ns()
    _tool.record_permission_required(timestamp=required_ns)
    return _record(await _decide_async(approval), required_ns)


def _args(
    edited: dict[str, Any] | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    # run_tool_calls calls a tool with the model's arguments as keywords; an edit replaces them all.
    return (args, kwargs) if edited is None else ((), edited)


def _gate(body: Callable[..., Any]) -> Callable[..., Any]:
    """``body`` behind the approval check, same signature and kind, so the check runs in its tool span."""
    if inspect.isasyncgenfunction(body):

        @functools.wraps(body)
        async def agen(*args: Any, **kwargs: Any) -> Any:
            args, kwargs = _args(await _check_async(), args, kwargs)
            async for item in body(*args, **kwargs):
                yield item

        return agen
    if inspect.iscoroutinefunction(body) or inspect.iscoroutinefunction(type(body).__call__):

        @functools.wraps(body)
        async def coro(*args: Any, **kwargs: Any) -> Any:
            args, kwargs = _args(await _check_async(), args, kwargs)
            return await body(*args, **kwargs)

        return coro
    if inspect.isgeneratorfunction(body):

        @functools.wraps(body)
        def gen(*args: Any, **kwargs: Any) -> Any:
            args, kwargs = _args(_check_sync(), args, kwargs)
            return (yield from body(*args, **kwargs))

        return gen

    @functools.wraps(body)
    def func(*args: Any, **kwargs: Any) -> Any:
        args, kwargs = _args(_check_sync(), args, kwargs)
        return body(*args, **kwargs)

    return func


def gated(body: Callable[..., Any]) -> Callable[..., Any]:
    """``_gate(body)`` with the docstring of the function a ``functools.partial`` wraps (not partial's)."""
    gate = _gate(body)
    if isinstance(body, functools.partial):
        gate.__doc__ = inspect.getdoc(body.func)
    return gate
