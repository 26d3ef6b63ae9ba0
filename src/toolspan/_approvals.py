"""Approvals of ``run_tool_calls``: the ``approve`` callback runs inside the tool's span, records
``permission_required`` / ``permission_decided``, and a denied call raises ``ToolDenied`` before the
tool body runs."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from toolspan import _tool
from toolspan._callshapes import DEFAULT_DENY_NOTE, ToolCall

_logger = logging.getLogger(__name__)

__all__ = ["APPROVAL", "ApprovalRequest", "Approver", "Decision", "gated", "run_blocking"]

Decision = bool | str | tuple[bool | str, str | None] | tuple[bool | str, str | None, str | None]
_Verdict = tuple[str, str | None, str | None]  # decision, note, who decided
Approver = Callable[[ToolCall], Decision | Awaitable[Decision]]

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


# The approval of the call being run; set by the runner around each call, read by the gate.
APPROVAL: contextvars.ContextVar[ApprovalRequest | None] = contextvars.ContextVar(
    "toolspan_approval", default=None
)


def _normalize(value: Any) -> _Verdict:
    note: str | None = None
    by: str | None = None
    if isinstance(value, tuple) and len(value) in (2, 3):
        value, raw_note, *rest = value
        note = None if raw_note is None else str(raw_note)
        by = None if not rest or rest[0] is None else str(rest[0])
    if value is True or value == _ALLOW:
        return _ALLOW, note, by
    if value is False or value == _DENY:
        return _DENY, note, by
    raise ValueError(
        f"approve returned {value!r}; expected a bool, 'allow', 'deny', "
        "(decision, note) or (decision, note, by)"
    )


def _failed_approval(exc: BaseException) -> _Verdict:
    _logger.warning("toolspan: approve raised; the tool call is denied", exc_info=exc)
    return _DENY, f"approval failed: {type(exc).__name__}: {exc}", None


def _decide_sync(approval: ApprovalRequest) -> _Verdict:
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


async def _decide_async(approval: ApprovalRequest) -> _Verdict:
    try:
        value = approval.approve(approval.call)
        if inspect.isawaitable(value):
            value = await value
        return _normalize(value)
    except Exception as exc:
        return _failed_approval(exc)


def _record(decision: _Verdict) -> None:
    verdict, note, by = decision
    _tool.record_permission_decided(verdict, note=note, by=by)
    if verdict == _DENY:
        raise _tool.ToolDenied(note or DEFAULT_DENY_NOTE)


def _check_sync() -> None:
    approval = APPROVAL.get()
    if approval is not None:
        _tool.record_permission_required()
        _record(_decide_sync(approval))


async def _check_async() -> None:
    approval = APPROVAL.get()
    if approval is not None:
        _tool.record_permission_required()
        _record(await _decide_async(approval))


def _gate(body: Callable[..., Any]) -> Callable[..., Any]:
    """``body`` behind the approval check, same signature and kind, so the check runs in its tool span."""
    if inspect.isasyncgenfunction(body):

        @functools.wraps(body)
        async def agen(*args: Any, **kwargs: Any) -> Any:
            await _check_async()
            async for item in body(*args, **kwargs):
                yield item

        return agen
    if inspect.iscoroutinefunction(body) or inspect.iscoroutinefunction(type(body).__call__):

        @functools.wraps(body)
        async def coro(*args: Any, **kwargs: Any) -> Any:
            await _check_async()
            return await body(*args, **kwargs)

        return coro
    if inspect.isgeneratorfunction(body):

        @functools.wraps(body)
        def gen(*args: Any, **kwargs: Any) -> Any:
            _check_sync()
            return (yield from body(*args, **kwargs))

        return gen

    @functools.wraps(body)
    def func(*args: Any, **kwargs: Any) -> Any:
        _check_sync()
        return body(*args, **kwargs)

    return func


def gated(body: Callable[..., Any]) -> Callable[..., Any]:
    """``_gate(body)`` with the docstring of the function a ``functools.partial`` wraps (not partial's)."""
    gate = _gate(body)
    if isinstance(body, functools.partial):
        gate.__doc__ = inspect.getdoc(body.func)
    return gate
