"""The seam between the tool wrappers and what may stand in for a tool body: a live policy check
(``configure(policy=...)``) and ``toolspan.replay``.

While neither is in use, a tool call pays one list read (``ACTIVE[0]``). Otherwise each call gets a stand-in
for its body from the policy guard (installed process-wide) and from the replay session of its context (if
any); the stand-in is called where the body would be, inside the tool's span, and decides whether the body
runs: the guard first (a denied call never reaches a recorded result either), then the replay session.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import AsyncIterator, Callable, Generator
from typing import Any, Final, Protocol

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api

from toolspan import _serialize
from toolspan._context import ToolFrame, current_tool
from toolspan.config import get_config

__all__ = [
    "ACTIVE",
    "GUARD",
    "SESSION_KEY",
    "Decide",
    "Session",
    "body_stand_in",
    "call_arguments",
    "enter",
    "install_guard",
    "leave",
    "own_tool_span",
    "substitute",
]

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


# ``decide(args, kwargs)`` runs where the body would run: ``None`` lets the body run; a function gives what
# the call returns instead (for a generator tool, the items it yields), or raises.
Decide = Callable[[tuple[Any, ...], dict[str, Any]], Callable[[], Any] | None]


def body_stand_in(kind: str, wrapped: Callable[..., Any], decide: Decide) -> Callable[..., Any]:
    """A callable of ``wrapped``'s kind (``sync``, ``async``, ``gen``, ``agen``) asking ``decide`` first."""
    if kind == "async":

        async def call_async(*args: Any, **kwargs: Any) -> Any:
            instead = decide(args, kwargs)
            return await wrapped(*args, **kwargs) if instead is None else instead()

        return call_async
    if kind == "gen":

        def call_gen(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
            instead = decide(args, kwargs)
            if instead is None:
                return (yield from wrapped(*args, **kwargs))
            yield from instead() or ()
            return None

        return call_gen
    if kind == "agen":

        async def call_agen(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            instead = decide(args, kwargs)
            if instead is None:
                async for item in wrapped(*args, **kwargs):
                    yield item
                return
            for item in instead() or ():
                yield item

        return call_agen

    def call(*args: Any, **kwargs: Any) -> Any:
        instead = decide(args, kwargs)
        return wrapped(*args, **kwargs) if instead is None else instead()

    return call


def call_arguments(info: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A call's arguments as toolspan records them (JSON values), whatever the capture setting."""
    config = dataclasses.replace(get_config(), capture_content=True)
    return json.loads(_serialize.dumps(info.params.bind(instance, args, kwargs), config))


def own_tool_span() -> tuple[trace_api.Span, ToolFrame] | None:
    """The running tool's span and frame, when the current span is that tool's (tracing on)."""
    span = trace_api.get_current_span()
    frame = current_tool()
    if frame is not None and span.get_span_context().is_valid and frame.span is span:
        return span, frame
    return None
