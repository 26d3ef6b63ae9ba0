"""agent / plan / thought spans, sub-plans of tools, links, messages."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.trace import StatusCode

import toolspan
from tests.support.instrumentation import Spans, by_name, call_id, exec_id, parent_id, tool_attrs
from toolspan._instrument.messages import input_messages, output_messages

pytestmark = pytest.mark.usefixtures("fresh_config")


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "parts": [{"type": "text", "content": text}]}]


def assistant(text: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "parts": [{"type": "text", "content": text}], "finish_reason": "stop"}]


def agent_attrs(name: str, **extra: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": name,
        "openinference.span.kind": "AGENT",
        "agent.name": name,
    }
    attrs.update({key.replace("__", "."): value for key, value in extra.items()})
    return attrs


def with_input(attrs: dict[str, Any], messages: Any, key: str = "gen_ai.input.messages") -> dict[str, Any]:
    text = json.dumps(messages, ensure_ascii=False)
    if key:
        attrs[key] = text
    attrs["input.value"] = text
    attrs["input.mime_type"] = "application/json"
    return attrs


def with_output(attrs: dict[str, Any], messages: Any, key: str = "gen_ai.output.messages") -> dict[str, Any]:
    text = json.dumps(messages, ensure_ascii=False)
    if key:
        attrs[key] = text
    attrs["output.value"] = text
    attrs["output.mime_type"] = "application/json"
    return attrs


# --- agent --------------------------------------------------------------------------------------------


def test_agent_context_manager_records_messages_and_conversation(spans: Spans) -> None:
    with toolspan.agent(
        "planner", input="question?", conversation_id="c1", description="Plans.", agent_id="a-1"
    ) as run:
        assert run.execution_id == "exec_" + format(run.span.get_span_context().span_id, "016x")
        run.set_output("answer.")
    (span,) = spans()
    assert span.name == "invoke_agent planner"
    assert span.status.status_code is StatusCode.UNSET
    expected = agent_attrs(
        "planner",
        gen_ai__agent__id="a-1",
        gen_ai__agent__description="Plans.",
        gen_ai__conversation__id="c1",
    )
    with_input(expected, user("question?"))
    with_output(expected, assistant("answer."))
    assert dict(span.attributes or {}) == expected


def test_agent_input_learned_after_its_start_is_recorded_by_set_input(spans: Spans) -> None:
    with toolspan.agent("planner") as run:
        run.set_input("question?")
    (span,) = spans()
    assert dict(span.attributes or {}) == with_input(agent_attrs("planner"), user("question?"))


def test_agent_decorator_takes_first_string_argument_and_return_value(spans: Spans) -> None:
    @toolspan.agent(name="helper", conversation_id="c2")
    def helper(question: str, depth: int = 1) -> str:
        return f"{question} -> done"

    assert helper("why?") == "why? -> done"
    (span,) = spans()
    expected = agent_attrs("helper", gen_ai__conversation__id="c2")
    with_input(expected, user("why?"))
    with_output(expected, assistant("why? -> done"))
    assert dict(span.attributes or {}) == expected


async def test_async_agent_with_messages_list(spans: Spans) -> None:
    @toolspan.agent
    async def chat(messages: list[dict[str, Any]]) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"role": "assistant", "content": "hi there"}

    history = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert await chat(history) == {"role": "assistant", "content": "hi there"}
    (span,) = spans()
    assert span.name == "invoke_agent chat"
    expected = agent_attrs("chat")
    with_input(
        expected,
        [
            {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
            {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
        ],
    )
    with_output(expected, assistant("hi there"))
    assert dict(span.attributes or {}) == expected


def test_agent_content_off_records_no_messages(spans: Spans, content_off: None) -> None:
    with toolspan.agent("quiet", input="secret question", conversation_id="c3") as run:
        run.set_output("secret answer")
    (span,) = spans()
    assert dict(span.attributes or {}) == agent_attrs("quiet", gen_ai__conversation__id="c3")


def test_agent_failure_and_cancellation(spans: Spans) -> None:
    with pytest.raises(RuntimeError, match="model down"), toolspan.agent("broken"):
        raise RuntimeError("model down")
    with pytest.raises(KeyboardInterrupt), toolspan.agent("stopped"):
        raise KeyboardInterrupt
    broken, stopped = spans()
    assert broken.status.status_code is StatusCode.ERROR
    assert dict(broken.attributes or {}) == agent_attrs("broken", error__type="RuntimeError")
    assert [event.name for event in broken.events] == ["exception"]
    assert stopped.status.status_code is StatusCode.UNSET
    assert dict(stopped.attributes or {}) == agent_attrs("stopped", error__type="KeyboardInterrupt")


def test_context_manager_needs_a_name() -> None:
    with pytest.raises(TypeError, match="needs a name"), toolspan.agent():
        pass


# --- plan ------------------------------------------------------------------------------------------------


def test_plan_context_manager_and_decorator(spans: Spans) -> None:
    with toolspan.plan("research", input={"topic": "otel"}) as run:
        run.set_output(["step 1", "step 2"])

    @toolspan.plan(name="summarize")
    def summarize(text: str, limit: int = 10) -> str:
        return text[:limit]

    assert summarize("abcdefghijklmnop", limit=3) == "abc"
    research, summary = spans()
    assert research.name == "plan research"
    expected = {"toolspan.plan.name": "research", "openinference.span.kind": "CHAIN"}
    with_input(expected, {"topic": "otel"}, key="")
    with_output(expected, ["step 1", "step 2"], key="")
    assert dict(research.attributes or {}) == expected
    assert summary.name == "plan summarize"
    expected = {"toolspan.plan.name": "summarize", "openinference.span.kind": "CHAIN"}
    with_input(expected, {"text": "abcdefghijklmnop", "limit": 3}, key="")
    with_output(expected, "abc", key="")
    assert dict(summary.attributes or {}) == expected


async def test_async_context_manager_and_generator_plan(spans: Spans) -> None:
    async with toolspan.plan("async plan"):
        pass

    @toolspan.plan(name="stream plan")
    def stream():  # type: ignore[no-untyped-def]
        yield toolspan.current_execution_id()
        yield trace_api.get_current_span().name  # type: ignore[attr-defined]

    assert list(stream()) == [None, "plan stream plan"]
    names = [span.name for span in spans()]
    assert names == ["plan async plan", "plan stream plan"]


# --- nesting and parent ids -------------------------------------------------------------------------------


@toolspan.tool
def fetch(url: str) -> str:
    return f"<{url}>"


@toolspan.agent(name="researcher")
def researcher(question: str) -> str:
    return fetch(question)


@toolspan.tool
def delegate(task: str) -> str:
    """Run a sub-plan for a task."""
    with toolspan.plan("subtask"):
        return researcher(task)


def test_agent_tool_subplan_agent_tool_nesting(spans: Spans) -> None:
    with toolspan.agent("lead", input="go") as run, toolspan.tool_call_id("toolu_lead"):
        run.set_output(delegate("docs"))
    finished = spans()
    lead = by_name(finished, "invoke_agent lead")
    tool = by_name(finished, "execute_tool delegate")
    sub = by_name(finished, "plan subtask")
    inner_agent = by_name(finished, "invoke_agent researcher")
    inner_tool = by_name(finished, "execute_tool fetch")
    assert parent_id(lead) is None
    assert parent_id(tool) == lead.context.span_id  # type: ignore[union-attr]
    assert parent_id(sub) == tool.context.span_id  # type: ignore[union-attr]
    assert parent_id(inner_agent) == sub.context.span_id  # type: ignore[union-attr]
    assert parent_id(inner_tool) == inner_agent.context.span_id  # type: ignore[union-attr]
    assert {span.context.trace_id for span in finished} == {lead.context.trace_id}  # type: ignore[union-attr]
    assert dict(tool.attributes or {}) == tool_attrs(
        tool,
        "delegate",
        arguments='{"task": "docs"}',
        result='"<docs>"',
        description="Run a sub-plan for a task.",
        model_call_id="toolu_lead",
    )
    # The sub-plan (direct child of the tool) names its parent tool call; deeper spans do not.
    assert dict(sub.attributes or {}) == {
        "toolspan.plan.name": "subtask",
        "openinference.span.kind": "CHAIN",
        "toolspan.parent.execution_id": exec_id(tool),
        "toolspan.parent.tool_call_id": "toolu_lead",
    }
    assert sub.links == ()  # a child in the same trace, still inside its tool: no link needed
    expected = agent_attrs("researcher")
    with_input(expected, user("docs"))
    with_output(expected, assistant("<docs>"))
    assert dict(inner_agent.attributes or {}) == expected
    assert dict(inner_tool.attributes or {}) == tool_attrs(
        inner_tool, "fetch", arguments='{"url": "docs"}', result='"<docs>"'
    )


def test_agent_started_in_a_tool_carries_parent_ids(spans: Spans) -> None:
    @toolspan.tool
    def ask(q: str) -> str:
        return researcher(q)

    ask("x")
    finished = spans()
    tool = by_name(finished, "execute_tool ask")
    agent_span = by_name(finished, "invoke_agent researcher")
    assert agent_span.attributes is not None
    assert agent_span.attributes["toolspan.parent.execution_id"] == exec_id(tool)
    assert agent_span.attributes["toolspan.parent.tool_call_id"] == call_id(tool)


def test_new_trace_subplan_links_to_the_tool(spans: Spans) -> None:
    @toolspan.tool
    def spawn() -> None:
        with toolspan.plan("detached", new_trace=True):
            pass

    spawn()
    finished = spans()
    tool = by_name(finished, "execute_tool spawn")
    sub = by_name(finished, "plan detached")
    assert sub.parent is None
    assert sub.context.trace_id != tool.context.trace_id  # type: ignore[union-attr]
    assert [link.context for link in sub.links] == [tool.context]
    assert dict(sub.attributes or {}) == {
        "toolspan.plan.name": "detached",
        "openinference.span.kind": "CHAIN",
        "toolspan.parent.execution_id": exec_id(tool),
        "toolspan.parent.tool_call_id": call_id(tool),
    }


def test_subplan_outliving_its_tool_links_back(spans: Spans) -> None:
    captured: list[Context] = []

    @toolspan.tool
    def enqueue() -> None:
        captured.append(context_api.get_current())

    enqueue()
    with toolspan.plan("later", context=captured[0]):
        pass
    finished = spans()
    tool = by_name(finished, "execute_tool enqueue")
    sub = by_name(finished, "plan later")
    assert parent_id(sub) == tool.context.span_id  # type: ignore[union-attr]
    assert [link.context for link in sub.links] == [tool.context]
    assert sub.attributes is not None
    assert sub.attributes["toolspan.parent.execution_id"] == exec_id(tool)


def test_new_trace_outside_a_tool_links_to_the_current_span(spans: Spans) -> None:
    tracer = trace_api.get_tracer("test")
    with tracer.start_as_current_span("outer"), toolspan.plan("fresh", new_trace=True):
        pass
    finished = spans()
    outer = by_name(finished, "outer")
    fresh = by_name(finished, "plan fresh")
    assert fresh.parent is None
    assert [link.context for link in fresh.links] == [outer.context]
    assert dict(fresh.attributes or {}) == {"toolspan.plan.name": "fresh", "openinference.span.kind": "CHAIN"}


# --- thoughts -------------------------------------------------------------------------------------------


def test_thought_event_on_the_current_span(spans: Spans) -> None:
    with toolspan.agent("thinker"):
        toolspan.thought("I should search first.")
    toolspan.thought("no span: ignored")
    (span,) = spans()
    assert [(e.name, dict(e.attributes or {})) for e in span.events] == [
        ("toolspan.thought", {"toolspan.thought.content": "I should search first."})
    ]


def test_thought_without_content_and_truncated(spans: Spans, content_off: None) -> None:
    with toolspan.agent("thinker"):
        toolspan.thought("private")
    (span,) = spans()
    assert [(e.name, dict(e.attributes or {})) for e in span.events] == [("toolspan.thought", {})]


def test_long_thought_is_cut_within_budget(spans: Spans) -> None:
    from toolspan.config import Config, set_config

    set_config(Config(max_attribute_bytes=100))
    with toolspan.agent("thinker"):
        toolspan.thought("é" * 500)
    (span,) = spans()
    text = str((span.events[0].attributes or {})["toolspan.thought.content"])
    kept = len(text) - len(text.lstrip("é"))
    assert text == "é" * kept + f"...[truncated {500 - kept} chars]"  # the serializer's one marker
    assert 90 < len(text.encode()) <= 100


def test_no_provider_scopes_are_transparent() -> None:
    assert trace_api._TRACER_PROVIDER is None
    with toolspan.agent("a", input="q") as run:
        run.set_output("x")
        assert run.execution_id is None
    assert researcher("q") == "<q>"


# --- messages --------------------------------------------------------------------------------------------


def test_message_conversion_shapes() -> None:
    assert input_messages("hi") == user("hi")
    assert output_messages("bye") == assistant("bye")
    converted = input_messages(
        [
            {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "call_1", "function": {"name": "get", "arguments": '{"c": 1}'}}],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "tu_1", "name": "get", "input": {"c": 1}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "rain"}]},
            {"role": "user", "parts": [{"type": "text", "content": "as is"}]},
        ]
    )
    assert converted == [
        {"role": "user", "parts": [{"type": "text", "content": "weather?"}]},
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "call_1", "name": "get", "arguments": '{"c": 1}'}],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "sunny"}]},
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "tu_1", "name": "get", "arguments": {"c": 1}}],
        },
        {"role": "user", "parts": [{"type": "tool_call_response", "id": "tu_1", "response": "rain"}]},
        {"role": "user", "parts": [{"type": "text", "content": "as is"}]},
    ]
    assert output_messages({"answer": 42}) == [
        {"role": "assistant", "parts": [{"type": "text", "content": {"answer": 42}}], "finish_reason": "stop"}
    ]


# --- one agent/plan object entered by several tasks or threads at once ----------------------------------


@pytest.mark.parametrize("factory", [lambda: toolspan.agent("shared"), lambda: toolspan.plan("shared")])
async def test_one_object_entered_by_two_tasks_gives_independent_runs(spans: Spans, factory: Any) -> None:
    scope = factory()
    both_inside, first_out = asyncio.Event(), asyncio.Event()
    inside = 0
    seen: dict[str, int] = {}

    async def task(name: str) -> None:
        nonlocal inside
        async with scope:
            seen[name] = trace_api.get_current_span().get_span_context().span_id
            inside += 1
            if inside == 2:
                both_inside.set()
            await both_inside.wait()  # both runs open at once
            if name == "second":
                await first_out.wait()  # the first to enter exits first (not last-in, first-out)
            with toolspan.plan(f"child of {name}"):
                pass
        if name == "first":
            first_out.set()
        assert trace_api.get_current_span() is trace_api.INVALID_SPAN

    await asyncio.gather(task("first"), task("second"))
    assert trace_api.get_current_span() is trace_api.INVALID_SPAN
    shared = [span for span in spans() if span.name.endswith(" shared")]
    assert len(shared) == 2
    assert {span.context.span_id for span in shared if span.context} == set(seen.values())
    for name, span_id in seen.items():
        assert parent_id(by_name(spans(), f"plan child of {name}")) == span_id
    assert all(span.end_time is not None for span in shared)


def test_one_object_entered_by_two_threads_gives_independent_runs(spans: Spans) -> None:
    scope = toolspan.agent("shared")
    barrier = threading.Barrier(2)
    a_in, a_out = threading.Event(), threading.Event()
    seen: dict[str, int] = {}
    after: dict[str, Any] = {}

    def work(name: str) -> None:
        if name == "b":
            a_in.wait(timeout=30)  # a enters first, and exits first
        with scope:
            if name == "a":
                a_in.set()
            seen[name] = trace_api.get_current_span().get_span_context().span_id
            barrier.wait()  # both runs open at once
            if name == "b":
                a_out.wait(timeout=30)  # a exits first
            with toolspan.plan(f"child of {name}"):
                pass
        after[name] = trace_api.get_current_span()
        if name == "a":
            a_out.set()

    threads = [threading.Thread(target=work, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert after == {"a": trace_api.INVALID_SPAN, "b": trace_api.INVALID_SPAN}
    agents = [span for span in spans() if span.name == "invoke_agent shared"]
    assert sorted(span.context.span_id for span in agents if span.context) == sorted(seen.values())
    for name, span_id in seen.items():
        assert parent_id(by_name(spans(), f"plan child of {name}")) == span_id


def test_exit_without_enter_in_this_task_fails_clearly() -> None:
    scope = toolspan.plan("p")
    with pytest.raises(RuntimeError, match=r"toolspan.plan\('p'\) exited in a task or thread that did not"):
        scope.__exit__(None, None, None)
