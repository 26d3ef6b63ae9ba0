"""Every fact reader step reads a deep or long attribute in linear work (issue 35), measured without a clock:
the step count of a run (Python lines and calls, C calls, counted by ``sys.settrace`` and ``sys.setprofile``:
the same input always gives the same count) grows at most fourfold when the input grows fourfold, for every
adversarial shape of ``tests.support.adversarial`` in every attribute a reader parses, and every step ends
with a value (deep text stays text, never a ``RecursionError``).

What a count of steps cannot see is the work inside one C call (a regular expression that backtracks): the
depth guard's quadratic scan was of that kind, and ``tests/cli/test_unwritable.py`` converts a 1 MiB attribute
of every shape in a child process to catch it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from tests.support.adversarial import SHAPES, shape
from toolspan import semconv
from toolspan.bridge import facts, internal
from toolspan.bridge.model import Span

SMALL = 8192  # both sizes past the integer limit (4,300 digits), under the literal limit (100,000)


def _span(text: str) -> Span:
    """A span with ``text`` in every attribute a fact reader parses as JSON or a literal."""
    return Span(
        trace_id="a" * 32,
        span_id="b" * 16,
        parent_span_id=None,
        name="execute_tool t",
        start_ns=1,
        end_ns=2,
        attributes={
            semconv.GEN_AI_OPERATION_NAME: "execute_tool",
            semconv.GEN_AI_TOOL_NAME: "t",
            semconv.GEN_AI_TOOL_CALL_ARGUMENTS: text,
            semconv.GEN_AI_TOOL_CALL_RESULT: text,
            semconv.GEN_AI_INPUT_MESSAGES: text,
            semconv.GEN_AI_OUTPUT_MESSAGES: text,
            semconv.GEN_AI_RESPONSE_FINISH_REASONS: text,
            semconv.OI_INPUT_VALUE: text,
            semconv.OI_OUTPUT_VALUE: text,
            semconv.MLFLOW_SPAN_INPUTS: text,
            semconv.MLFLOW_SPAN_OUTPUTS: text,
            semconv.TRACELOOP_ENTITY_INPUT: json.dumps({"input_str": text}),
            semconv.TRACELOOP_ENTITY_OUTPUT: text,
            semconv.LANGFUSE_INPUT: text,
        },
    )


def _mlflow(text: str) -> Span:
    span = _span(text)
    return Span(
        **{**{f: getattr(span, f) for f in span.__slots__}, "attributes": {semconv.MLFLOW_SPAN_TYPE: text}}
    )


# Every reader step, each from one attribute text to what it reads.
STEPS: dict[str, Callable[[str], Any]] = {
    "parse_json": facts.parse_json,
    "normal_arguments (a literal)": lambda text: internal.normal_arguments({"input_str": text}),
    "normal_result": internal.normal_result,
    "classify": lambda text: facts.classify(_span(text)),
    "classify (mlflow.spanType)": lambda text: facts.classify(_mlflow(text)),
    "content_attributes": lambda text: internal.content_attributes(_span(text), is_tool=True),
    "tool_call": lambda text: facts.tool_call(_span(text)),
    "requested_calls": lambda text: facts.requested_calls(_span(text)),
    "model_call": lambda text: facts.model_call(_span(text)),
    "agent_name": lambda text: facts.agent_name(_span(text)),
}


def _steps(step: Callable[[str], Any], text: str) -> int:
    count = 0

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        count += 1
        return trace

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event == "c_call":
            count += 1

    sys.settrace(trace)
    sys.setprofile(profile)
    try:
        step(text)
    finally:
        sys.setprofile(None)
        sys.settrace(None)
    return count


@pytest.mark.parametrize("name", list(SHAPES))
@pytest.mark.parametrize("step", list(STEPS))
def test_every_reader_step_reads_every_shape_in_linear_steps(step: str, name: str) -> None:
    read = STEPS[step]
    read(shape(name, SMALL))  # first use loads what the step loads: not counted
    small = _steps(read, shape(name, SMALL))
    large = _steps(read, shape(name, 4 * SMALL))
    assert large <= 4 * small + 200, (small, large)


@pytest.mark.parametrize("name", list(SHAPES))
@pytest.mark.parametrize("step", list(STEPS))
def test_every_reader_step_ends_on_a_mebibyte_of_every_shape(step: str, name: str) -> None:
    # Neither RecursionError nor any other error, and the same answer again: the bridge is deterministic.
    text = shape(name)
    assert STEPS[step](text) == STEPS[step](text)


def test_deep_text_stays_text_and_shallow_json_is_read() -> None:
    for name in (
        "deep brackets",
        "deep closed brackets",
        "unterminated escaped quotes",
        "brackets in strings",
    ):
        assert facts.parse_json(shape(name)) == shape(name)
    assert facts.parse_json("[" * 256 + "]" * 256) is not None
    assert isinstance(facts.parse_json("[" * 256 + "]" * 256), list)
    assert facts.parse_json("[" * 257 + "]" * 257) == "[" * 257 + "]" * 257
    # A string that never ends holds the brackets after it: no nesting, and no JSON either.
    text = '["' + '\\"' * 1000 + "[" * 1000
    assert facts.parse_json(text) == text
