"""Cancelling a running tool call on request (the control channel of ``toolspan serve``).

An approver that can also deliver cancel requests (``toolspan.ServerApprover``) has a
``supervise(execution_id)`` context manager: the decision chain (``toolspan._decisions.chain``) enters it
around the body of each call it approved, and gets a ``Supervision`` whose ``request(by, note)`` the approver
calls from its watcher thread. Then:

- an async tool: its body runs as a task of its own, which is cancelled; the call raises ``ToolCancelled``;
- a sync tool: ``toolspan.check_cancelled()`` raises ``ToolCancelled`` at the tool's next check;
- a generator tool: ``ToolCancelled`` is thrown into it at its next yield;
- a call whose cancel request arrived before its body started never runs its body.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Awaitable, Iterator
from typing import Any, Protocol, TypeVar

from toolspan.errors import ToolCancelled

T = TypeVar("T")

__all__ = ["Supervision", "Supervisor", "check_cancelled", "current", "supervising"]


class Supervision:
    """One running call that may be cancelled on request."""

    __slots__ = ("_event", "_lock", "_loop", "_task", "by", "execution_id", "note")

    def __init__(self, execution_id: str) -> None:
        self.execution_id = execution_id
        self.by: str | None = None
        self.note: str | None = None
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._task: asyncio.Future[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def request(self, by: str | None, note: str | None) -> None:
        """Ask for the call to stop (any thread; the first request counts)."""
        with self._lock:
            if self._event.is_set():
                return
            self.by, self.note = by, note
            self._event.set()
            task, loop = self._task, self._loop
        if task is not None and loop is not None:
            loop.call_soon_threadsafe(task.cancel)

    def error(self) -> ToolCancelled:
        return ToolCancelled(self.note, by=self.by)

    def check(self) -> None:
        if self._event.is_set():
            raise self.error()

    def run_task(self, task: asyncio.Future[Any], loop: asyncio.AbstractEventLoop) -> None:
        """The async body runs as ``task``: a request cancels it."""
        with self._lock:
            self._task, self._loop = task, loop
            cancel_now = self._event.is_set()
        if cancel_now:
            task.cancel()


class Supervisor(Protocol):
    def supervise(self, execution_id: str) -> contextlib.AbstractContextManager[Supervision]: ...


_CURRENT: contextvars.ContextVar[Supervision | None] = contextvars.ContextVar(
    "toolspan_supervision", default=None
)


def current() -> Supervision | None:
    """The supervision of the call running in this context, if any."""
    return _CURRENT.get()


def check_cancelled() -> None:
    """In a tool's body: raise ``toolspan.errors.ToolCancelled`` if a cancellation of this call was requested
    (through ``toolspan serve``, delivered by ``toolspan.ServerApprover``); else do nothing. A long sync tool
    calls it between steps; outside a supervised call it never raises."""
    supervision = _CURRENT.get()
    if supervision is not None:
        supervision.check()


@contextlib.contextmanager
def supervising(supervisor: Supervisor | None, execution_id: str | None) -> Iterator[Supervision | None]:
    """Around a body: the call's ``Supervision`` (``None`` when nothing supervises it). Raises
    ``ToolCancelled`` before the body when the request came first."""
    if supervisor is None or execution_id is None:
        yield None
        return
    with supervisor.supervise(execution_id) as supervision:
        token = _CURRENT.set(supervision)
        try:
            supervision.check()
            yield supervision
        finally:
            _CURRENT.reset(token)


async def run_cancellable(supervision: Supervision, coro: Awaitable[T]) -> T:
    """Await ``coro`` as a task of its own that a request cancels; ``ToolCancelled`` then."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(coro)
    supervision.run_task(task, loop)
    try:
        return await task
    except asyncio.CancelledError:
        me = asyncio.current_task()
        # Cancelled from outside too (Python 3.11+ counts it): the caller's cancellation goes on.
        outer = me is not None and bool(getattr(me, "cancelling", lambda: 0)())
        if supervision.requested and not outer:
            raise supervision.error() from None
        raise
