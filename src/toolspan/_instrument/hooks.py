"""The hooks of the instrumentation core: how the layers above it take part in a call or hear of a span,
without the core importing them.

- **Deciding** (``ACTIVE``, ``DECIDER``, ``install_decider``, ``uninstall_decider``): while nothing decides
  calls, a tool call pays one list read (``ACTIVE[0]``). The decision chain (``toolspan._decisions.chain``)
  installs itself as the decider (``chain.install()``, undone by ``chain.uninstall()``) and counts in
  ``ACTIVE`` what may decide a call anywhere in the process (a policy, an approver's run, a replay); while
  that is not zero, every tool body goes behind ``DECIDER[0]``. In a process started while a replay ran
  (``TOOLSPAN_REPLAYING``), the decider until one is installed refuses every body.
- **Span hooks** (``SpanHook``, ``register``, ``unregister``): processors that want more than the SDK's
  ``on_start``/``on_end`` register here: ``on_refresh(span)`` when a running span's state changed (an
  approval asked for or decided: the pending processor exports a fresh record), ``on_text_delta(span,
  event)`` for each ``text_delta`` chunk (the live processor relays it). A hook that raises is logged and
  skipped. A hook that exports records of running spans may also answer ``follows(span)`` (whether it
  does for that span): ``followed(span)`` asks them all (the server's approver warns when none does).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Final, Protocol, TypeAlias

from opentelemetry import trace as trace_api

from toolspan._instrument.info import Body, CallKind, ToolInfo
from toolspan._util import env as _env
from toolspan.errors import ReplayError

__all__ = [
    "ACTIVE",
    "DECIDER",
    "Decider",
    "SpanHook",
    "followed",
    "hooks",
    "install_decider",
    "refresh",
    "register",
    "uninstall_decider",
    "unregister",
]

_logger = logging.getLogger(__name__)

# ``DECIDER[0](info, wrapped, instance, kind)``: ``wrapped`` behind the decision chain (once installed).
Decider: TypeAlias = Callable[[ToolInfo, Body, object, CallKind], Body]


def _undecided(info: ToolInfo, wrapped: Body, instance: object, kind: CallKind) -> Body:
    """The decider while none is installed: the body as it is."""
    return wrapped


def _replaying(info: ToolInfo, wrapped: Body, instance: object, kind: CallKind) -> Body:
    """The decider of a process started while a replay ran (``TOOLSPAN_REPLAYING``), until the decision chain
    loads: the replay's records are not here, so no body runs (a ``ReplayError`` of the kind's own shape)."""

    def refuse() -> ReplayError:
        return ReplayError(
            f"tool {info.name!r} was called in a process started while a replay ran (TOOLSPAN_REPLAYING): the"
            " replay's records are not in this process, so its body does not run"
        )

    if kind == "async":

        async def call_async(*args: object, **kwargs: object) -> object:
            raise refuse()

        return call_async
    if kind == "gen":

        def call_gen(*args: object, **kwargs: object) -> Iterator[object]:
            raise refuse()
            yield  # noqa: V201 (unreachable on purpose: a generator function, as the tool is)

        return call_gen
    if kind == "agen":

        async def call_agen(*args: object, **kwargs: object) -> AsyncIterator[object]:
            raise refuse()
            yield  # noqa: V201 (unreachable on purpose: an async generator function, as the tool is)

        return call_agen

    def call(*args: object, **kwargs: object) -> object:
        raise refuse()

    return call


# A process started by one that replayed refuses every body from the start (the chain, once installed, too).
_INHERITED: Final = bool(_env.get(_env.TOOLSPAN_REPLAYING))
_DEFAULT: Final[Decider] = _replaying if _INHERITED else _undecided
ACTIVE: Final[list[int]] = [1 if _INHERITED else 0]
DECIDER: Final[list[Decider]] = [_DEFAULT]
_decider_lock: Final = threading.Lock()


def install_decider(decider: Decider) -> None:
    """Put every tool body behind ``decider`` while anything decides (``ACTIVE``); undone by
    ``uninstall_decider``."""
    with _decider_lock:
        DECIDER[0] = decider


def uninstall_decider(decider: Decider) -> None:
    """Take ``decider`` away, if it is the one installed: tool bodies go behind the default again."""
    with _decider_lock:
        if DECIDER[0] is decider:
            DECIDER[0] = _DEFAULT


class SpanHook(Protocol):
    """What a processor implements to hear of a running span beyond its start and end (either may be a
    no-op)."""

    def on_refresh(self, span: trace_api.Span) -> None:
        """The running ``span``'s state changed (an approval was asked for or decided)."""
        ...

    def on_text_delta(self, span: trace_api.Span, event: dict[str, Any]) -> None:
        """A ``text_delta`` chunk of ``span`` (``event``: the progress-stream ``text_chunk`` fields)."""
        ...


_hooks: weakref.WeakSet[Any] = weakref.WeakSet()
_lock: Final = threading.Lock()


def register(hook: SpanHook) -> None:
    """Let ``hook`` hear of running spans (held weakly: a processor that is gone is forgotten)."""
    with _lock:
        _hooks.add(hook)


def unregister(hook: SpanHook) -> None:
    with _lock:
        _hooks.discard(hook)


def hooks() -> list[SpanHook]:
    """The registered hooks, now."""
    with _lock:
        return list(_hooks)


def refresh(span: trace_api.Span) -> None:
    """Tell every hook that ``span``'s state changed; never raises."""
    for hook in hooks():
        try:
            hook.on_refresh(span)
        except Exception:
            _logger.warning("toolspan: a span hook failed on refresh", exc_info=True)


def followed(span: trace_api.Span) -> bool:
    """Whether some hook exports records of ``span`` while it runs (its optional ``follows(span)``)."""
    for hook in hooks():
        follows = getattr(hook, "follows", None)
        try:
            if follows is not None and follows(span):
                return True
        except Exception:
            _logger.warning("toolspan: a span hook failed on follows", exc_info=True)
    return False
