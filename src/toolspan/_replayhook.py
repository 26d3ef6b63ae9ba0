"""The seam between the tool wrappers and ``toolspan.replay``.

While no replay runs anywhere, a tool call pays one list read (``ACTIVE[0]``). While one does, each call
asks the session of its context (if any) for a stand-in of the tool body: the stand-in serves the recorded
result or runs the body, and is called where the body would be, inside the tool's span.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Protocol

from opentelemetry import context as context_api

__all__ = ["ACTIVE", "SESSION_KEY", "Session", "substitute"]

# How many replay sessions are entered, in any context: tools look further only when it is not zero.
ACTIVE: Final[list[int]] = [0]


class Session(Protocol):
    def stand_in(
        self, info: Any, wrapped: Callable[..., Any], instance: Any, kind: str
    ) -> Callable[..., Any]:
        """A callable for ``wrapped`` of the given kind (``sync``, ``async``, ``gen``, ``agen``)."""
        ...


# The session lives in the OpenTelemetry context, so it follows the calling span into threads and tasks.
SESSION_KEY: Final = context_api.create_key("toolspan-replay-session")


def substitute(info: Any, wrapped: Callable[..., Any], instance: Any, kind: str) -> Callable[..., Any]:
    """``wrapped``, or the stand-in of the replay session of the current context."""
    session: Session | None = context_api.get_value(SESSION_KEY)  # type: ignore[assignment]
    return wrapped if session is None else session.stand_in(info, wrapped, instance, kind)
