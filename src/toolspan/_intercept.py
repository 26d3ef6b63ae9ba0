"""The seam between the tool wrappers and the decision chain (``_chain``): what is installed to decide.

While nothing decides, a tool call pays one list read (``ACTIVE[0]``). ``ACTIVE`` counts what may decide a
call anywhere in the process: a policy guard (``configure(policy=...)``), each replay entered, each
``run_tool_calls`` with an approver while it runs. When it is not zero, every tool call goes through the
chain (``_chain.substitute``), which looks for what applies to that call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Final, Protocol

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api

from toolspan._context import ToolFrame, current_tool

__all__ = [
    "ACTIVE",
    "GUARD",
    "SESSION_KEY",
    "Guard",
    "Session",
    "active_sessions",
    "current_session",
    "enter",
    "install_guard",
    "leave",
    "own_tool_span",
]

ACTIVE: Final[list[int]] = [0]


class Guard(Protocol):
    def check(
        self, name: str, arguments: Any, *, approver: bool, approved: bool, final: bool, edited: Any = None
    ) -> None:
        """Raise ``ToolDenied`` when the call breaks the policy (see ``_guard.PolicyGuard.check``)."""
        ...


class Session(Protocol):
    def prepare(self, info: Any, arguments: Any) -> Callable[[], Any] | None:
        """What to give instead of running the body (``None``: run it), for the model's ``arguments``."""
        ...


# The replay session lives in the OpenTelemetry context, so it follows the calling span into threads and
# tasks; the sessions entered in the process are listed too, for a thread that did not inherit a context.
SESSION_KEY: Final = context_api.create_key("toolspan-replay-session")
_SESSIONS: Final[list[Session]] = []

# The policy guard of the process (``configure(policy=...)``), if any.
GUARD: Final[list[Guard | None]] = [None]
_lock: Final = threading.Lock()


def enter(session: Session | None = None) -> None:
    """Something that decides starts (a replay ``session``, or an approver's run)."""
    with _lock:
        ACTIVE[0] += 1
        if session is not None:
            _SESSIONS.append(session)


def leave(session: Session | None = None) -> None:
    """It ends."""
    with _lock:
        ACTIVE[0] -= 1
        if session is not None:
            _SESSIONS.remove(session)


def install_guard(guard: Guard | None) -> None:
    """Make ``guard`` the process's policy guard (``None`` removes it)."""
    with _lock:
        if (GUARD[0] is None) != (guard is None):
            ACTIVE[0] += 1 if guard is not None else -1
        GUARD[0] = guard


def current_session() -> Session | None:
    """The replay session of the current context, if any."""
    session: Session | None = context_api.get_value(SESSION_KEY)  # type: ignore[assignment]
    return session


def active_sessions() -> list[Session]:
    """The replay sessions entered anywhere in the process, oldest first."""
    with _lock:
        return list(_SESSIONS)


def own_tool_span() -> tuple[trace_api.Span, ToolFrame] | None:
    """The running tool's span and frame, when the current span is that tool's (tracing on)."""
    span = trace_api.get_current_span()
    frame = current_tool()
    if frame is not None and span.get_span_context().is_valid and frame.span is span:
        return span, frame
    return None
