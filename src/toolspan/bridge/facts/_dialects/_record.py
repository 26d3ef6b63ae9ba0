"""The record of one framework convention (``Dialect``) and the small helpers its readers share."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toolspan import semconv as sc
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.model import Span

__all__ = [
    "Dialect",
    "Requested",
    "assistant",
    "chat_messages",
    "dispatched_call_id",
    "flattened_calls",
    "int_value",
    "tool_attributes",
    "user",
]

# A reader of a span's attributes (hooks take the attributes the shared readers see: the span's own plus
# what its events and its dialect's reader say in GenAI names).
Attrs = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Requested:
    """One tool call a model asked for: the model's id (if any), the tool's name and its arguments."""

    id: str | None
    name: str
    arguments: Any


def _no_kind(span: Span) -> str | None:
    return None


@dataclass(frozen=True, slots=True, eq=False)  # a convention is itself: compared by identity
class Dialect:
    """One framework convention: how a framework's own attributes say what the GenAI conventions say.

    Every field but ``name`` has a default that does nothing: a convention fills in what it writes. The
    shared readers (``_classify``, ``_tools``, ``_agents``, ``_model_calls``, ``_requests``) ask the
    conventions of ``DIALECTS`` in its order; where two conventions' keys are on one span, the earlier one's
    are read first.
    """

    name: str
    # Its place in ``DIALECTS``: conventions are asked in increasing ``precedence`` (each its own number;
    # see the package's docstring for the bands), so where two conventions' keys are on one span, the one
    # with the lower number is read first.
    precedence: int
    # Keys whose presence marks a span as this convention's (and span names that do, for tracers that mark a
    # span only by its name). The first convention of ``DIALECTS`` that marks a span is the span's dialect.
    markers: tuple[str, ...] = ()
    span_names: tuple[str, ...] = ()
    # The kind it gives a span it marks (``tool``, ``llm``, ``agent``, ``chain``, ``retriever`` or ``None``).
    kind: Callable[[Span], str | None] = _no_kind
    # ``True``: a kind recognised from names or content, asked only after GenAI's own rule for tools
    # (``gen_ai.tool.name``, ``execute_tool {name}``); ``False``: a kind the tracer states, asked before it.
    recognised: bool = False
    # The GenAI-named attributes its own attributes give a span it marks (tool name, call id, arguments,
    # result, agent name, messages, model, usage); the span's own GenAI attributes win. A convention with a
    # reader claims the span: no later convention gives it a kind or a reading.
    read: Callable[[Span], Mapping[str, Any]] | None = None
    # The error text it recorded as an attribute, if any.
    error: Callable[[Span], str | None] | None = None
    # Whether a span's own attributes say the call failed (when no status says so).
    failed: Callable[[Attrs], bool] | None = None
    # A span of this convention that records no call of its own (its kind is ``other``, whatever it says).
    other: Callable[[Attrs], bool] | None = None
    # Every key its ``markers``/``kind``/``error``/``failed``/``other``/``tool_name_keys``/``name_of_tool``
    # read, and the tool name ``read`` gives: what the server keeps of a span it indexes without parsing it
    # all (``INDEX_KEYS``). ``tests/bridge/facts/test_dialect_registry.py`` checks nothing else is read.
    index_keys: frozenset[str] = frozenset()
    # Values it writes where it has none (read as absent): Google ADK's ``<not specified>``.
    absent_values: frozenset[str] = frozenset()
    # Its own keys each shared reader reads after the GenAI ones.
    tool_name_keys: tuple[str, ...] = ()
    call_id_keys: tuple[str, ...] = ()
    tool_input_keys: tuple[str, ...] = ()
    tool_output_keys: tuple[str, ...] = ()
    # Of ``tool_input_keys``, those holding the arguments as the very JSON text the model sent.
    arguments_text_keys: tuple[str, ...] = ()
    agent_name_keys: tuple[str, ...] = ()
    agent_input_keys: tuple[str, ...] = ()
    agent_output_keys: tuple[str, ...] = ()
    conversation_keys: tuple[str, ...] = ()
    model_keys: tuple[str, ...] = ()
    input_tokens_keys: tuple[str, ...] = ()
    output_tokens_keys: tuple[str, ...] = ()
    cached_tokens_keys: tuple[str, ...] = ()
    reasoning_tokens_keys: tuple[str, ...] = ()
    finish_reason_keys: tuple[str, ...] = ()
    # Where it records a span's output as JSON a model's response may be found in (LangChain's
    # ``response_metadata``), and a model call's output that may hold the tool calls it asked for.
    output_keys: tuple[str, ...] = ()
    request_keys: tuple[str, ...] = ()
    # Hooks for what does not fit a key list (``None``: the convention has nothing of the kind).
    # A tool's name from its span (after every key): DSPy's ``get_weather.__call__``.
    name_of_tool: Callable[[Span, Attrs], str | None] | None = None
    # A tool's arguments read from its own shape (after every key): OpenLLMetry's ``{"args", "kwargs"}``.
    tool_input_of: Callable[[Attrs], Any] | None = None
    # A model call's messages held in flattened keys (``output``: its output, else its input).
    messages_of: Callable[[Attrs, bool], list[dict[str, Any]] | None] | None = None
    # An agent's input (``output=False``) or answer text in a record of its own: CrewAI's ``TaskOutput``.
    agent_text_of: Callable[[Attrs, bool], str | None] | None = None
    # The tool calls a model call asked for, in flattened keys (before the message shapes are walked).
    requests_of: Callable[[Attrs], list[Requested]] | None = None
    # The same from the model's text (after everything else): DSPy ReAct's fields.
    text_requests_of: Callable[[Attrs], list[Requested]] | None = None
    # A model call's model, usage and finish reason recorded in a shape of its own (read where the keys
    # said nothing): ``{"model", "finish_reason", "input_tokens", "output_tokens"}``, any missing; ``None``
    # when it recorded none.
    model_facts_of: Callable[[Attrs], Mapping[str, Any] | None] | None = None
    # A finish reason in its recorded output (after the GenAI output messages').
    finish_reason_of: Callable[[Attrs], str | None] | None = None
    # Whether an ``llm`` span of its calls a model (``False``: it only builds the request).
    calls_model: Callable[[Span], bool] | None = None
    # A tool's arguments out of a wrapper it records a call's input in (BeeAI's ``{"input", "options"}``),
    # ``None`` where the value is no such wrapper (asked before the shared unwrapping).
    arguments_of: Callable[[Any], Any] | None = None
    # Whether a tool span records an event of its parent tool span's call, no call of its own (BeeAI's
    # ``error`` event span inside its tool's span): the same call, counted once.
    event_record: Callable[[Attrs], bool] | None = None
    # The error a failed span's own explanation gives, asked before its ``exception`` event (BeeAI's chain
    # of causes, the tool's own exception the deepest).
    explained_error: Callable[[Span], str | None] | None = None
    # The tools' responses a model call sent back to the model, by call id (Google ADK's request): the
    # outcome of a call whose span recorded none.
    responses_of: Callable[[Attrs], Mapping[str, Any]] | None = None
    # Whether a model call (an ``llm`` span) asked for tool calls it does not record (Spring AI's: no model
    # message on any span): a tool span no request matches is linked to the latest such call before it.
    asks_unrecorded_calls: Callable[[Span], bool] | None = None
    # Whether a tool span is a transport library's record of a call (an MCP client's or server's): the
    # transport leg of the call a tool span of the same tool above it made, the call itself alone.
    transport_record: Callable[[Span], bool] | None = None
    # A tool's result out of a wrapper its span records one in (OpenLLMetry's MCP client's ``{"result",
    # "is_error"}``), given the value its output key holds: unwrapped, or given back as it is.
    tool_output_of: Callable[[Span, Any], Any] | None = None
    # A tool's result out of a wrapper it records results in wherever they are read (OpenLLMetry's MCP
    # server's ``[{"type": "text", "content": ...}]``), ``None`` where the value is no such wrapper (asked
    # before the shared unwrapping, which then reads what it gives).
    results_of: Callable[[Any], Any] | None = None
    # The model's id for the call a span that dispatches a tool records in its own input (LangGraph's
    # ``tools`` task: ``{"tool_call": {"id": ...}}``; LlamaIndex's ``call_tool`` step: ``ToolCall(...,
    # tool_id=...)``), given the dispatching span's attributes: the id of the tool span under it.
    dispatched_id_of: Callable[[Attrs], str | None] | None = None

    def marks(self, span: Span) -> bool:
        """Whether ``span`` carries one of this convention's markers (a key, or its name)."""
        attrs = span.attributes
        for key in self.markers:
            if key in attrs:
                return True
        return span.name in self.span_names


def dispatched_call_id(attrs: Attrs, key: str) -> str | None:
    """The id of the ``tool_call`` a dispatching span's input (``key``, JSON text) holds: LangGraph's
    ``tools`` task, ``{"tool_call": {"id": ...}}``, alone or under ``inputs``."""
    raw = attrs.get(key)
    if not isinstance(raw, str) or "tool_call" not in raw:
        return None  # parsed only when it may hold a call (most spans' inputs hold none)
    value = parse_json(raw)
    if isinstance(value, Mapping) and isinstance(value.get("inputs"), Mapping):
        value = value["inputs"]
    call = value.get("tool_call") if isinstance(value, Mapping) else None
    if isinstance(call, Mapping) and call.get("id"):
        return str(call["id"])
    return None


def int_value(attrs: Attrs, *keys: str) -> int | None:
    """The first of ``keys`` holding a whole number (an int, a whole float, a text of digits)."""
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.isdigit():
            return int(value)
    return None


def user(value: Any) -> list[dict[str, Any]] | None:
    return None if value is None else [{"role": "user", "content": value}]


def assistant(value: Any) -> list[dict[str, Any]] | None:
    return None if value is None else [{"role": "assistant", "content": value}]


def tool_attributes(name: Any, arguments: Any, result: Any, call_id: Any = None) -> dict[str, Any]:
    """A tool call in GenAI names."""
    return {
        sc.GEN_AI_TOOL_NAME: name,
        sc.GEN_AI_TOOL_CALL_ID: call_id,
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: arguments,
        sc.GEN_AI_TOOL_CALL_RESULT: result,
    }


def chat_messages(value: Any) -> Any:
    """A model call's recorded inputs or outputs as a message list: an OpenAI response's ``choices`` (each
    message with its ``finish_reason``), a request's ``messages``, or the value itself."""
    if isinstance(value, Mapping):
        choices = value.get("choices")
        if isinstance(choices, list):
            return [
                {**c["message"], "finish_reason": c.get("finish_reason")}
                for c in choices
                if isinstance(c, Mapping) and isinstance(c.get("message"), Mapping)
            ]
        messages = value.get("messages")
        if isinstance(messages, list):
            return messages
    return value


def flattened_calls(attrs: Attrs, pattern: re.Pattern[str], name_key: str, args_key: str) -> list[Requested]:
    """Tool calls held in flattened keys ``pattern`` matches (groups: message index, call index, field)."""
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for key, value in attrs.items():
        match = pattern.fullmatch(key)
        if match:
            found.setdefault((int(match[1]), int(match[2])), {})[match[3]] = value
    out = []
    for _, fields in sorted(found.items()):
        name = fields.get(name_key)
        if name:
            cid = fields.get("id")
            cid = None if cid in (None, "") else str(cid)
            out.append(Requested(cid, str(name), parse_json(fields.get(args_key))))
    return out
