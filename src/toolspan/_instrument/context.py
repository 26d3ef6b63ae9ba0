"""What travels in the OpenTelemetry ``Context`` besides the span: the running tool and the model's
call id handed to the next tool.

Both live in the OpenTelemetry context (not in bare ``contextvars``), so everything that carries the
context carries them too: ``asyncio`` tasks, and threads once the OpenTelemetry threading
instrumentation is on (``toolspan.configure()`` turns it on).
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from types import TracebackType
from typing import Generic, TypeVar

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.context import Context

from toolspan._util.ids import execution_id, synthetic_call_id

__all__ = [
    "AGENTS_KEY",
    "PENDING_CALL_ID_KEY",
    "PLAIN_SUPPRESS_KEY",
    "SUPPRESS_KEY",
    "TOOL_KEY",
    "Handoff",
    "TaskStack",
    "ToolFrame",
    "current_agents",
    "current_execution_id",
    "current_tool",
    "current_tool_call_id",
    "own_tool_span",
    "suppressed",
    "take_pending_call_id",
    "tool_call_id",
    "with_agent",
]

TOOL_KEY = context_api.create_key("toolspan-tool")
PENDING_CALL_ID_KEY = context_api.create_key("toolspan-pending-call-id")
# The names of the agents a call runs under, outermost first (a tuple): for policies.
AGENTS_KEY = context_api.create_key("toolspan-agents")


# OpenTelemetry's "suppress instrumentation" flags, as the contrib instrumentations read them
# (``opentelemetry.instrumentation.utils.suppress_instrumentation`` sets both): the context key the
# API defines, and the plain string key older code sets.
PLAIN_SUPPRESS_KEY = "suppress_instrumentation"
SUPPRESS_KEY: str = getattr(context_api, "_SUPPRESS_INSTRUMENTATION_KEY", PLAIN_SUPPRESS_KEY)


def suppressed(ctx: Context | None = None) -> bool:
    """Whether instrumentation is suppressed in ``ctx`` (default: the current context): then toolspan
    starts no span and calls straight through, like the OpenTelemetry contrib instrumentations."""
    values = ctx if ctx is not None else context_api.get_current()
    return bool(values.get(SUPPRESS_KEY) or values.get(PLAIN_SUPPRESS_KEY))


T = TypeVar("T")


class TaskStack(Generic[T]):
    """What a context manager object keeps between ``__enter__`` and ``__exit__``, per task and thread,
    so one object entered by several at once keeps their entries apart."""

    __slots__ = ("_entries", "_what")

    def __init__(self, what: str) -> None:
        self._what = what
        self._entries: ContextVar[tuple[T, ...]] = ContextVar(f"toolspan-{what}", default=())

    def push(self, entry: T) -> None:
        self._entries.set((*self._entries.get(), entry))

    def pop(self) -> T:
        """The latest entry of this task or thread; ``RuntimeError`` when it has none."""
        entries = self._entries.get()
        if not entries:
            raise RuntimeError(f"{self._what} exited in a task or thread that did not enter it")
        self._entries.set(entries[:-1])
        return entries[-1]


class ToolFrame(tuple[trace_api.Span, int, "str | None"]):
    """The tool call running in a context: ``(span, span id, the model's call id or None)``; its two ids
    are spelled out when asked for (a call whose ids are not written pays nothing for them). Made with
    ``tuple.__new__(ToolFrame, (span, span_id, call_id))``."""

    __slots__ = ()

    @property
    def span(self) -> trace_api.Span:
        return self[0]

    @property
    def execution_id(self) -> str:
        return execution_id(self[1])

    @property
    def tool_call_id(self) -> str:
        return self[2] or synthetic_call_id(self[1])


def current_agents(ctx: Context | None = None) -> tuple[str, ...]:
    """The names of the agents the current code runs under, outermost first (sub-plans included)."""
    agents = context_api.get_value(AGENTS_KEY, ctx)
    return agents if isinstance(agents, tuple) else ()


def with_agent(name: str, ctx: Context) -> Context:
    """``ctx`` with ``name`` added as the innermost agent."""
    return context_api.set_value(AGENTS_KEY, (*current_agents(ctx), name), ctx)


def current_tool(ctx: Context | None = None) -> ToolFrame | None:
    """The innermost running tool call of ``ctx`` (default: the current context), or ``None``."""
    frame = (ctx if ctx is not None else context_api.get_current()).get(TOOL_KEY)
    return frame if isinstance(frame, ToolFrame) else None


def current_execution_id() -> str | None:
    """The ``execution_id`` of the innermost running tool call; ``None`` outside a tool (or when
    tracing is off)."""
    frame = current_tool()
    return None if frame is None else frame.execution_id


def current_tool_call_id() -> str | None:
    """The ``tool_call_id`` of the innermost running tool call (the model's id when it gave one);
    ``None`` outside a tool (or when tracing is off)."""
    frame = current_tool()
    return None if frame is None else frame.tool_call_id


class Handoff:
    """A model call id waiting for the next tool span; taken at most once, by one span only."""

    __slots__ = ("_slot",)

    def __init__(self, call_id: str) -> None:
        self._slot = [call_id]

    def take(self) -> str | None:
        try:
            return self._slot.pop()  # atomic: of two racing tool calls exactly one gets the id
        except IndexError:
            return None


def take_pending_call_id(ctx: Context) -> str | None:
    """Take the call id handed over by ``tool_call_id(...)`` in ``ctx``, if any is still waiting."""
    handoff = ctx.get(PENDING_CALL_ID_KEY)
    if handoff is None:
        return None
    return handoff.take() if isinstance(handoff, Handoff) else None


class tool_call_id:
    """Hand the model's own call id to the next tool span started inside the block (that one only).

        with toolspan.tool_call_id("toolu_01A..."):
            result = get_weather(city="Paris")   # its span carries gen_ai.tool.call.id = "toolu_01A..."

    The id is taken by the first tool span that starts in this block or in a task or thread started
    from it; every other tool call gets its own ``"call_" + <span id>``. Leaving the block drops an
    id nobody took. Sibling tasks never see each other's blocks.
    """

    __slots__ = ("_call_id", "_tokens")

    def __init__(self, call_id: str) -> None:
        if not isinstance(call_id, str) or not call_id:
            raise ValueError(f"tool_call_id needs a non-empty string, got {call_id!r}")
        self._call_id = call_id
        self._tokens: TaskStack[Token[Context]] = TaskStack("toolspan.tool_call_id")

    def __enter__(self) -> str:
        ctx = context_api.set_value(PENDING_CALL_ID_KEY, Handoff(self._call_id))
        self._tokens.push(context_api.attach(ctx))
        return self._call_id

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        context_api.detach(self._tokens.pop())


def own_tool_span() -> tuple[trace_api.Span, ToolFrame] | None:
    """The running tool's span and frame, when the current span is that tool's (tracing on)."""
    span = trace_api.get_current_span()
    frame = current_tool()
    if frame is not None and span.get_span_context().is_valid and frame.span is span:
        return span, frame
    return None
