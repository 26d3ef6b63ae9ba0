"""The seam between the tool wrappers and what may stand in for a tool body: a live policy check
(``configure(policy=...)``) and ``toolspan.replay``.

While neither is in use, a tool call pays one list read (``ACTIVE[0]``). Otherwise each call gets a stand-in
for its body from the policy guard (installed process-wide) and from the replay session of its context (if
any); the stand-in is called where the body would be, inside the tool's span, and decides whether the body
runs: the guard first (a denied call never reaches a recorded result either), then the replay session.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Final, Protocol

from opentelemetry import context as context_api

__all__ = ["ACTIVE", "GUARD", "SESSION_KEY", "Session", "enter", "install_guard", "leave", "substitute"]

# Replay sessions entered in any context, plus one while a policy guard is installed: tools look further
# only when it is not zero.
ACTIVE: Final[list[int]] = [0]


class Session(Protocol):
    def stand_in(
        self, info: Any, wrapped: Callable[..., Any], instance: Any, kind: str
    ) -> Callable[..., Any]:
        """A callable for ``wrapped`` of the given kind (``sync``, ``async``, ``gen``, ``agen``)."""
        ...


# The session lives in the OpenTelemetry context, so it follows the calling span into threads and tasks.
SESSION_KEY: Final = context_api.create_key("toolspan-replay-session")


# The policy guard of the process (``configure(policy=...)``), if any.
GUARD: Final[list[Session | None]] = [None]
_lock: Final = threading.Lock()


def enter() -> None:
    """A replay session starts (in any context)."""
    with _lock:
        ACTIVE[0] += 1


def leave() -> None:
    """A replay session ends."""
    with _lock:
        ACTIVE[0] -= 1


def install_guard(guard: Session | None) -> None:
    """Make ``guard`` the process's policy guard (``None`` removes it)."""
    with _lock:
        if (GUARD[0] is None) != (guard is None):
            ACTIVE[0] += 1 if guard is not None else -1
        GUARD[0] = guard


def substitute(info: Any, wrapped: Callable[..., Any], instance: Any, kind: str) -> Callable[..., Any]:
    """``wrapped`` behind the replay session of the current context and the policy guard, if any."""
    session: Session | None = context_api.get_value(SESSION_KEY)  # type: ignore[assignment]
    if session is not None:
        wrapped = session.stand_in(info, wrapped, instance, kind)
    guard = GUARD[0]
    if guard is not None:
        wrapped = guard.stand_in(info, wrapped, instance, kind)
    return wrapped
