"""tool_call_id handoff, current ids, and context across tasks and threads."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.instrumentation.utils import suppress_instrumentation

import toolspan
from tests.support.instrumentation import Spans, by_name, call_id, exec_id, parent_id
from toolspan._instrument.context import PENDING_CALL_ID_KEY

pytestmark = pytest.mark.usefixtures("fresh_config")


@toolspan.tool
def lookup(key: str) -> tuple[str | None, str | None]:
    return toolspan.current_execution_id(), toolspan.current_tool_call_id()


@toolspan.tool
async def alookup(key: str) -> tuple[str | None, str | None]:
    await asyncio.sleep(0)
    return toolspan.current_execution_id(), toolspan.current_tool_call_id()


def attr(span: object, key: str) -> object:
    return (getattr(span, "attributes", None) or {}).get(key)


def test_current_ids_inside_and_outside_a_tool(spans: Spans) -> None:
    assert toolspan.current_execution_id() is None
    assert toolspan.current_tool_call_id() is None
    inside = lookup("k")
    (span,) = spans()
    assert inside == (exec_id(span), call_id(span))
    assert toolspan.current_execution_id() is None


def test_handoff_goes_to_the_next_tool_only(spans: Spans) -> None:
    with toolspan.tool_call_id("toolu_01A") as given:
        assert given == "toolu_01A"
        first = lookup("a")
        second = lookup("b")
    third = lookup("c")
    s1, s2, s3 = spans()
    assert first == (exec_id(s1), "toolu_01A")
    assert attr(s1, "gen_ai.tool.call.id") == "toolu_01A"
    assert attr(s1, "toolspan.tool_call_id") == "toolu_01A"
    assert second == (exec_id(s2), call_id(s2))
    assert attr(s2, "gen_ai.tool.call.id") is None  # never a synthesized id in the GenAI attribute
    assert third == (exec_id(s3), call_id(s3))


def test_nested_tool_does_not_take_the_outer_handoff(spans: Spans) -> None:
    @toolspan.tool
    def outer() -> tuple[str | None, str | None]:
        return lookup("inner")

    with toolspan.tool_call_id("toolu_outer"):
        inner_ids = outer()
    inner, outer_span = spans()
    assert attr(outer_span, "toolspan.tool_call_id") == "toolu_outer"
    assert inner_ids == (exec_id(inner), call_id(inner))
    assert parent_id(inner) == outer_span.context.span_id  # type: ignore[union-attr]


def test_handoff_rejects_empty_ids() -> None:
    with pytest.raises(ValueError, match="non-empty string"):
        toolspan.tool_call_id("")


def test_unused_handoff_is_dropped_at_block_exit(spans: Spans) -> None:
    with toolspan.tool_call_id("toolu_unused"):
        pass
    lookup("x")
    (span,) = spans()
    assert attr(span, "toolspan.tool_call_id") == call_id(span)


async def test_sibling_tasks_each_get_their_own_handoff(spans: Spans) -> None:
    async def one(model_id: str) -> tuple[str | None, str | None]:
        with toolspan.tool_call_id(model_id):
            await asyncio.sleep(0)  # let the siblings interleave
            return await alookup(model_id)

    results = await asyncio.gather(*(one(f"toolu_{i}") for i in range(5)))
    assert [tool_call for _, tool_call in results] == [f"toolu_{i}" for i in range(5)]
    by_call = {attr(span, "toolspan.tool_call_id"): span for span in spans()}
    assert sorted(by_call) == [f"toolu_{i}" for i in range(5)]
    assert len({attr(span, "toolspan.execution_id") for span in spans()}) == 5


async def test_one_handoff_shared_by_two_tasks_goes_to_exactly_one(spans: Spans) -> None:
    with toolspan.tool_call_id("toolu_shared"):
        first, second = await asyncio.gather(alookup("a"), alookup("b"))
    call_ids = sorted(str(ids[1]) for ids in (first, second))
    assert call_ids[1] == "toolu_shared"
    assert call_ids[0].startswith("call_")  # the other call got its own id: ids are never shared
    assert len({attr(span, "toolspan.execution_id") for span in spans()}) == 2


async def test_handoff_is_taken_when_the_coroutine_tool_is_called(spans: Spans) -> None:
    with toolspan.tool_call_id("toolu_early"):
        pending = alookup("x")
    assert (await pending)[1] == "toolu_early"


def test_threads_get_distinct_ids_and_own_handoffs(spans: Spans, threading_instrumented: None) -> None:
    def one(i: int) -> tuple[str | None, str | None]:
        with toolspan.tool_call_id(f"toolu_{i}"):
            return lookup(str(i))

    tracer = trace_api.get_tracer("test")
    with tracer.start_as_current_span("agent turn"), ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(one, range(8)))
    finished = spans()
    root = by_name(finished, "agent turn")
    tools = [span for span in finished if span.name == "execute_tool lookup"]
    assert len(tools) == 8
    assert {parent_id(span) for span in tools} == {root.context.span_id}  # type: ignore[union-attr]
    assert [tool_call for _, tool_call in results] == [f"toolu_{i}" for i in range(8)]
    assert len({exec for exec, _ in results}) == 8


def test_thread_pool_keeps_parent_and_carries_the_handoff(spans: Spans, threading_instrumented: None) -> None:
    tracer = trace_api.get_tracer("test")
    with tracer.start_as_current_span("parent"), ThreadPoolExecutor(max_workers=2) as pool:
        with toolspan.tool_call_id("toolu_thread"):
            future = pool.submit(lookup, "x")
        assert future.result()[1] == "toolu_thread"
    finished = spans()
    tool_span = by_name(finished, "execute_tool lookup")
    assert parent_id(tool_span) == by_name(finished, "parent").context.span_id  # type: ignore[union-attr]


async def test_run_in_executor_keeps_parent(spans: Spans, threading_instrumented: None) -> None:
    tracer = trace_api.get_tracer("test")
    loop = asyncio.get_running_loop()
    with tracer.start_as_current_span("parent"):
        await loop.run_in_executor(None, lookup, "x")
    finished = spans()
    tool_span = by_name(finished, "execute_tool lookup")
    assert parent_id(tool_span) == by_name(finished, "parent").context.span_id  # type: ignore[union-attr]


async def test_gather_keeps_parent_and_ids_are_distinct(spans: Spans) -> None:
    tracer = trace_api.get_tracer("test")
    with tracer.start_as_current_span("parent"):
        results = await asyncio.gather(*(alookup(str(i)) for i in range(6)))
    finished = spans()
    parent = by_name(finished, "parent")
    tools = [span for span in finished if span.name == "execute_tool alookup"]
    assert {parent_id(span) for span in tools} == {parent.context.span_id}  # type: ignore[union-attr]
    assert len({ids[0] for ids in results}) == 6
    assert len({ids[1] for ids in results}) == 6


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.TaskGroup is Python 3.11+")
async def test_task_group_keeps_parent(spans: Spans) -> None:
    tracer = trace_api.get_tracer("test")
    with tracer.start_as_current_span("parent"):
        async with asyncio.TaskGroup() as group:  # type: ignore[attr-defined]
            tasks = [group.create_task(alookup(str(i))) for i in range(3)]
    finished = spans()
    parent = by_name(finished, "parent")
    tools = [span for span in finished if span.name == "execute_tool alookup"]
    assert len(tools) == 3
    assert {parent_id(span) for span in tools} == {parent.context.span_id}  # type: ignore[union-attr]
    assert sorted(t.result()[0] or "" for t in tasks) == sorted(exec_id(s) for s in tools)


def test_concurrent_calls_of_one_tool_never_share_ids(spans: Spans) -> None:
    barrier = threading.Barrier(4)

    @toolspan.tool
    def wait_together() -> str | None:
        barrier.wait(timeout=10)
        return toolspan.current_execution_id()

    threads = [threading.Thread(target=wait_together) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    finished = spans()
    assert len(finished) == 4
    assert len({attr(span, "toolspan.execution_id") for span in finished}) == 4
    assert len({attr(span, "toolspan.tool_call_id") for span in finished}) == 4


# --- OpenTelemetry's suppress_instrumentation -------------------------------------------------------------


@toolspan.tool
def numbers(n: int) -> Iterator[int]:
    yield from range(n)


@toolspan.tool
async def anumbers(n: int) -> AsyncIterator[int]:
    for i in range(n):
        yield i


@toolspan.agent
def respond(question: str) -> str:
    return f"{question}!"


@toolspan.plan
async def aplan(n: int) -> int:
    return n + 1


async def test_suppressed_instrumentation_starts_no_span_and_calls_through(spans: Spans) -> None:
    calls = [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"key": "k"}'}}]
    with suppress_instrumentation():
        assert lookup("k") == (None, None)
        assert await alookup("k") == (None, None)
        assert list(numbers(3)) == [0, 1, 2]
        assert [i async for i in anumbers(2)] == [0, 1]
        assert respond("q") == "q!"
        assert await aplan(1) == 2
        with toolspan.agent("a") as run, toolspan.plan("p"):
            assert run.execution_id is None
            assert trace_api.get_current_span() is trace_api.INVALID_SPAN
            toolspan.thought("t")
        results = toolspan.run_tool_calls(calls, [lookup], approve=lambda call: True)
        assert results == [{"role": "tool", "tool_call_id": "c1", "content": "[null, null]"}]
        assert await toolspan.arun_tool_calls(calls, [lookup]) == results
    assert list(spans()) == []
    # Outside the block everything is traced again.
    lookup("k")
    assert [span.name for span in spans()] == ["execute_tool lookup"]


def test_suppression_inside_an_agent_hides_its_tools_only(spans: Spans) -> None:
    with toolspan.agent("outer"):
        with suppress_instrumentation():
            lookup("k")
            toolspan.run_tool_calls(
                [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}],
                {"lookup": lambda: "ok"},
                approve=lambda call: toolspan.Approval("allow", note="fine"),
            )
        lookup("k")
    outer = by_name(spans(), "invoke_agent outer")
    assert outer.events == ()  # no permission events land on the agent either
    assert [span.name for span in spans()] == ["execute_tool lookup", "invoke_agent outer"]


async def test_one_tool_call_id_block_entered_by_two_tasks(spans: Spans) -> None:
    block = toolspan.tool_call_id("toolu_shared")
    first_in, first_out = asyncio.Event(), asyncio.Event()

    async def task(name: str) -> tuple[str | None, str | None]:
        if name == "second":
            await first_in.wait()
        with block:
            if name == "first":
                first_in.set()
                await asyncio.sleep(0)
            else:
                await first_out.wait()  # the first to enter leaves first
            ids = await alookup(name)
        assert context_api.get_value(PENDING_CALL_ID_KEY) is None  # each block left its task as found
        if name == "first":
            first_out.set()
        return ids

    first, second = await asyncio.gather(task("first"), task("second"))
    # Each task's block hands the id to its own first tool call.
    assert first[1] == "toolu_shared"
    assert second[1] == "toolu_shared"
    assert [attr(span, "gen_ai.tool.call.id") for span in spans()] == ["toolu_shared", "toolu_shared"]
