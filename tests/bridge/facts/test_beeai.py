"""BeeAI Framework via OpenInference: its event records, its runs' inputs and its errors' explanations."""

from __future__ import annotations

from typing import Any

from tests.support.bridge_data import span
from toolspan import semconv as sc
from toolspan.bridge.facts import TOOL, classify, tool_error
from toolspan.bridge.link import tool_legs
from toolspan.bridge.model import Span, SpanEvent

EXPLAINED = (
    "ToolError(beeai_framework.tools.errors): Tool Error\n"
    'Context: {"name": "get_population"}\n'
    "  ValueError(builtins): unknown city: Atlantis"
)


def _tool(n: int, parent: int | None, name: str, output: str, **extra: Any) -> Span:
    exception = SpanEvent(
        name=sc.EXCEPTION_EVENT,
        time_ns=0,
        attributes={
            sc.EXCEPTION_TYPE: "beeai_framework.tools.errors.ToolError",
            sc.EXCEPTION_MESSAGE: "Tool Error",
        },
    )
    attrs = {sc.OPENINFERENCE_SPAN_KIND: "TOOL", sc.OI_OUTPUT_VALUE: output, **extra}
    return span(n, parent, name, 0, 1, attrs, status="ERROR", events=(exception,))


def test_a_failed_tools_error_is_the_deepest_cause_beeai_explains() -> None:
    assert tool_error(_tool(1, None, "get_population", EXPLAINED)) == "ValueError: unknown city: Atlantis"


def test_an_output_that_does_not_explain_the_spans_own_error_is_not_read_as_one() -> None:
    other = "KeyError(builtins): 'x'\n  ValueError(builtins): not this one"
    assert tool_error(_tool(1, None, "t", other)) == "beeai_framework.tools.errors.ToolError: Tool Error"


def test_an_event_record_inside_a_tool_span_is_a_second_record_of_that_call() -> None:
    record = {sc.BEEAI_EVENT_PATH: "tool.custom.get_population.error", sc.BEEAI_EVENT_RUN_ID: "run-1"}
    spans = [
        _tool(1, None, "get_population", EXPLAINED, **{sc.OI_TOOL_NAME: "get_population"}),
        _tool(2, 1, "error", EXPLAINED, **record),
    ]
    kinds = [classify(s) for s in spans]
    assert kinds == [TOOL, TOOL]
    assert tool_legs(spans, kinds, [None, 0]) == {1: 0}
    # Without BeeAI's marks, a tool span of another name inside a tool span is a call of its own.
    plain = [spans[0], _tool(2, 1, "error", EXPLAINED)]
    assert tool_legs(plain, kinds, [None, 0]) == {}
