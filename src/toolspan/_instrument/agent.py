"""``agent(...)``: ``invoke_agent {name}`` spans, and ``thought(...)`` events.

An agent records its input and output as GenAI chat messages (``gen_ai.input.messages`` /
``gen_ai.output.messages``) as well as OpenInference values; a decorated agent's input is its first
positional string argument (or a ``messages`` list).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar, overload

from opentelemetry import trace as trace_api
from opentelemetry.context import Context

from toolspan import semconv
from toolspan._capture import serialize as _serialize
from toolspan._instrument import hooks
from toolspan._instrument.handle import Kind, value_attributes
from toolspan._instrument.messages import input_messages, output_messages
from toolspan._instrument.params import Parameters, first_str_argument
from toolspan._instrument.scopes import Scope, make_scope
from toolspan.config import Config, get_config

_logger = logging.getLogger(__name__)

__all__ = ["AGENT", "agent", "thought"]


class _AgentKind(Kind):
    name = "agent"
    span_prefix = semconv.AGENT_SPAN_PREFIX

    def attributes(self, name: str, extra: dict[str, Any]) -> dict[str, Any]:
        attrs: dict[str, Any] = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT,
            semconv.GEN_AI_AGENT_NAME: name,
        }
        attrs.update(extra)
        attrs[semconv.OPENINFERENCE_SPAN_KIND] = semconv.OI_KIND_AGENT
        attrs[semconv.OI_AGENT_NAME] = name
        return attrs

    def decorated_input(
        self, params: Parameters, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        return first_str_argument(params, instance, args, kwargs)

    def content_attributes(self, value: Any, output: bool, config: Config) -> dict[str, Any]:
        messages = output_messages(value) if output else input_messages(value)
        text = _serialize.dumps(messages, config)
        key = semconv.GEN_AI_OUTPUT_MESSAGES if output else semconv.GEN_AI_INPUT_MESSAGES
        return {key: text, **value_attributes(text, output)}


AGENT = _AgentKind()


F = TypeVar("F", bound=Callable[..., Any])


@overload
def agent(name: F, /) -> F: ...
@overload
def agent(
    name: str | None = None,
    *,
    input: Any = None,
    conversation_id: str | None = None,
    description: str | None = None,
    agent_id: str | None = None,
    context: Context | None = None,
    new_trace: bool = False,
    tracer_provider: trace_api.TracerProvider | None = None,
) -> Scope: ...
def agent(
    name: Any = None,
    *,
    input: Any = None,
    conversation_id: str | None = None,
    description: str | None = None,
    agent_id: str | None = None,
    context: Context | None = None,
    new_trace: bool = False,
    tracer_provider: trace_api.TracerProvider | None = None,
) -> Any:
    """An ``invoke_agent {name}`` span, as a decorator or a context manager.

        with toolspan.agent("planner", input="question", conversation_id="c1") as run:
            run.set_output("answer")

    As a decorator (``@toolspan.agent`` or ``@toolspan.agent(name=...)``), the first positional
    string argument (or a ``messages`` list) is the input and the return value the output.
    """
    attrs: dict[str, Any] = {}
    if agent_id is not None:
        attrs[semconv.GEN_AI_AGENT_ID] = agent_id
    if description is not None:
        attrs[semconv.GEN_AI_AGENT_DESCRIPTION] = description
    if conversation_id is not None:
        attrs[semconv.GEN_AI_CONVERSATION_ID] = conversation_id
    return make_scope(
        AGENT, name, attrs, input=input, context=context, new_trace=new_trace, tracer_provider=tracer_provider
    )


def thought(text: str) -> None:
    """Record the agent's reasoning ``text`` as a ``toolspan.thought`` event on the current span
    (the text only when content capture is on)."""
    try:
        span = trace_api.get_current_span()
        if not span.is_recording():
            return
        config = get_config()
        attrs: dict[str, Any] = {}
        if config.capture_content:
            attrs[semconv.THOUGHT_CONTENT] = _serialize.redact_text(str(text), config)
        span.add_event(semconv.THOUGHT_EVENT, attrs)
        # A server that shows the span while it runs (pending records) gets the thought now.
        hooks.refresh(span)
    except Exception:
        _logger.warning("toolspan: could not record a thought", exc_info=True)
