"""What the instrumentation knows of a tool (``ToolInfo``, computed once at decoration) and the types of the
decision path: the tool span (``tool``), the hooks (``hooks.Decider``) and the decision chain
(``toolspan._decisions``) share them, so a decision is typed end to end. A leaf: it imports nothing of the
instrumentation but the parameter layout (``params``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeAlias

from opentelemetry import trace as trace_api

from toolspan import semconv
from toolspan._instrument.params import Parameters
from toolspan.config import CONVENTIONS, CONVENTIONS_BOTH, CONVENTIONS_GENAI, CONVENTIONS_OPENINFERENCE

__all__ = [
    "Arguments",
    "Body",
    "CallArgs",
    "CallKind",
    "CallKwargs",
    "JsonValue",
    "Serve",
    "ToolInfo",
    "late_attributes",
    "template",
]

CallKind: TypeAlias = Literal["sync", "async", "gen", "agen"]
"""The kind of a tool's function: what its body returns (a value, an awaitable, a generator, an async one)."""

Body: TypeAlias = Callable[..., object]
"""A tool's body, or what stands in for it, as the decorator calls it (``wrapped(*args, **kwargs)``)."""

CallArgs: TypeAlias = tuple[object, ...]
CallKwargs: TypeAlias = dict[str, object]

JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
"""A JSON value, as a decision judges a call's arguments (whole, at any depth)."""

Arguments: TypeAlias = dict[str, JsonValue]
"""A call's arguments by parameter name, as whole JSON values (``chain.arguments_of``)."""

Serve: TypeAlias = Callable[[], object]
"""What stands in for a body (a replayed result), called instead of it."""


def template(name: str, description: str | None, tool_type: str, conventions: str) -> dict[str, str]:
    """The static start attributes of a tool span in ``conventions``."""
    attrs: dict[str, str] = {}
    if conventions != CONVENTIONS_OPENINFERENCE:
        attrs[semconv.GEN_AI_OPERATION_NAME] = semconv.OP_EXECUTE_TOOL
        attrs[semconv.GEN_AI_TOOL_NAME] = name
        attrs[semconv.GEN_AI_TOOL_TYPE] = tool_type
        if description:
            attrs[semconv.GEN_AI_TOOL_DESCRIPTION] = description
    if conventions == CONVENTIONS_OPENINFERENCE:
        attrs.update(late_attributes(name, description, conventions))
    return attrs


def late_attributes(name: str, description: str | None, conventions: str) -> dict[str, str]:
    """OpenInference's span kind, tool name and description: at the start of an OpenInference-only span;
    with both conventions, where they repeat the GenAI start attributes (``gen_ai.operation.name`` says
    what ``openinference.span.kind`` says), written with the ids at the end (straight into the span: each
    start attribute costs the SDK a validation)."""
    if conventions == CONVENTIONS_GENAI:
        return {}
    attrs = {semconv.OPENINFERENCE_SPAN_KIND: semconv.OI_KIND_TOOL, semconv.OI_TOOL_NAME: name}
    if description:
        attrs[semconv.OI_TOOL_DESCRIPTION] = description
    return attrs


class ToolInfo:
    """What ``@tool`` computed once for a function."""

    __slots__ = (
        "description",
        "func",
        "late",
        "name",
        "params",
        "span_name",
        "templates",
        "tool_type",
        "tracer_provider",
    )

    def __init__(
        self,
        func: Body,
        name: str,
        description: str | None,
        tool_type: str,
        tracer_provider: trace_api.TracerProvider | None,
    ) -> None:
        self.func = func
        self.name = name
        self.description = description
        self.tool_type = tool_type
        self.tracer_provider = tracer_provider
        self.span_name = semconv.TOOL_SPAN_PREFIX + name
        self.params = Parameters.of(func)
        # The static start attributes per conventions setting (the setting may change after decoration).
        self.templates = {conv: template(name, description, tool_type, conv) for conv in CONVENTIONS}
        self.late = late_attributes(name, description, CONVENTIONS_BOTH)
