"""Wake-ups on the event loop: a stream waiting for the next commit of what it shows (``Notifier``), and a
long poll waiting for the next decision or cancel request (``Changes``), whether made here or on another
replica of the same store."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Iterable
from typing import Final

__all__ = ["Changes", "Notifier"]


class Notifier:
    """Wakes the waiting streams after a commit (call ``notify`` on the event loop), only those it concerns:
    a stream of one trace wakes on commits of that trace, a conversation's on commits of that conversation
    or of a trace it holds, the all-traces stream on every commit. A commit that cannot say what it touched
    (``notify()`` with no traces) wakes every stream. So many idle streams cost a commit nothing but the
    lookups of the traces it wrote."""

    _SWEEP: Final = 1024  # waiters registered between two sweeps of keys whose waiters are all gone

    def __init__(self) -> None:
        self._all = asyncio.Event()
        self._keyed: dict[tuple[str, str], weakref.WeakSet[asyncio.Event]] = {}
        self._conversations = 0  # keyed conversation waiters registered since the last sweep (a hint)
        self._made = 0

    def waiter(
        self, *, traces: Iterable[str] | None = None, conversations: Iterable[str] = ()
    ) -> asyncio.Event:
        """The event the next commit concerning ``traces`` or ``conversations`` sets (``traces`` ``None``:
        the next commit at all). Taken before a read, so no commit after that read is missed."""
        if traces is None:
            return self._all
        event = asyncio.Event()
        for trace_id in traces:
            self._keyed.setdefault(("t", trace_id), weakref.WeakSet()).add(event)
        for conversation_id in conversations:
            self._keyed.setdefault(("c", conversation_id), weakref.WeakSet()).add(event)
            self._conversations += 1
        self._made += 1
        if self._made >= self._SWEEP:
            self._made = 0
            self._keyed = {k: v for k, v in self._keyed.items() if len(v)}
            self._conversations = sum(1 for k in self._keyed if k[0] == "c")
        return event

    @property
    def conversations_waiting(self) -> bool:
        """Whether any stream may wait on a conversation (then a commit names the conversations of the
        traces it wrote)."""
        return self._conversations > 0

    def notify(self, traces: Iterable[str] | None = None, conversations: Iterable[str] = ()) -> None:
        """A commit of ``traces`` (of those ``conversations``); ``None``: it cannot say which."""
        event, self._all = self._all, asyncio.Event()
        event.set()
        if traces is None:
            keyed, self._keyed = self._keyed, {}
            for waiters in keyed.values():
                for waiting in list(waiters):
                    waiting.set()
            return
        keys = [("t", t) for t in traces] + [("c", c) for c in conversations]
        for key in keys:
            found = self._keyed.pop(key, None)
            for waiting in list(found or ()):
                waiting.set()


class Changes:
    """Wakes the long polls on the event loop when a decision or a cancel request is stored (here, or on
    another replica of the same store)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        """A change (on the event loop)."""
        self._event.set()
        self._event = asyncio.Event()

    def current(self) -> asyncio.Event:
        """The event the next change sets (taken before a read, so no change after it is missed)."""
        return self._event
