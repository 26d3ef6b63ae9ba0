"""execution_id / tool_call_id formats."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from tests.support.paths import REPO
from toolspan._util import ids as _ids

SPAN_IDS = st.integers(min_value=1, max_value=2**64 - 1)


def test_formats() -> None:
    assert _ids.span_id_hex(255) == "00000000000000ff"
    assert _ids.execution_id(0xABC) == "exec_0000000000000abc"
    assert _ids.synthetic_call_id(0xABC) == "call_0000000000000abc"


@given(SPAN_IDS)
def test_round_trip(span_id: int) -> None:
    execution_id = _ids.execution_id(span_id)
    assert re.fullmatch(r"exec_[0-9a-f]{16}", execution_id)
    assert re.fullmatch(r"call_[0-9a-f]{16}", _ids.synthetic_call_id(span_id))
    assert _ids.parse_execution_id(execution_id) == span_id


@given(SPAN_IDS, SPAN_IDS)
def test_distinct_spans_distinct_ids(a: int, b: int) -> None:
    assert (_ids.execution_id(a) == _ids.execution_id(b)) == (a == b)


def test_parse_rejects_other_text() -> None:
    for text in (
        "",
        "exec_",
        "call_0000000000000abc",
        "exec_xyz0000000000000",
        "exec_0000000000000000",
        "exec_abc",
    ):
        assert _ids.parse_execution_id(text) is None


def test_hex_text_ids_and_plan_ids() -> None:
    assert _ids.execution_id("00000000000000ff") == "exec_00000000000000ff"
    assert _ids.synthetic_call_id("00000000000000ff") == "call_00000000000000ff"
    assert _ids.tool_ids(0xFF) == ("exec_00000000000000ff", "call_00000000000000ff")
    assert _ids.plan_id("00000000000000ff") == "plan_00000000000000ff"
    assert _ids.plan_id("0af7651916cd43dd8448eb211c80319c") == "plan_0af7651916cd43dd8448eb211c80319c"


def test_ids_are_built_in_one_place() -> None:
    """No module but ``_util.ids`` glues an id prefix to an id (``semconv`` only names the prefixes)."""
    src = REPO / "src" / "toolspan"
    glued = re.compile(r"""_ID_PREFIX\s*\+|\{\S*_ID_PREFIX\}|(?<!`)"(exec|call|plan)_"\s*\+""")
    offenders = [
        f"{path.relative_to(src)}:{number}"
        for path in sorted(src.rglob("*.py"))
        if path.relative_to(src).as_posix() != "_util/ids.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if glued.search(line.split("#", 1)[0])  # code, not comments
    ]
    assert offenders == []


def test_hex_ids_are_read_by_one_rule_spelled_as_arguments() -> None:
    trace = "0af7651916cd43dd8448eb211c80319c"
    # By default one spelling only: 32 (16) lowercase hex digits, nothing stripped.
    assert _ids.parse_trace_id(trace) == trace
    assert _ids.parse_span_id("00000000000000ff") == "00000000000000ff"
    for other in (trace.upper(), trace[1:], " " + trace, trace + "0", "g" * 32, "", "\u0661" * 32):
        assert _ids.parse_trace_id(other) is None, other
    # any_case: a pasted id in capitals; short: fewer digits, left-padded (Jaeger's 64-bit ids).
    assert _ids.parse_trace_id(trace.upper(), any_case=True) == trace
    assert _ids.parse_trace_id("ABC", short=True, any_case=True) == "abc".rjust(32, "0")
    assert _ids.parse_trace_id("abc") is None
    assert _ids.parse_trace_id("", short=True) is None
    assert _ids.parse_trace_id(" abc", short=True) is None
    assert _ids.hex_id("İ" * 8, 16, short=True, any_case=True) is None  # lower() makes it 16 characters


@given(st.integers(min_value=0, max_value=2**128 - 1), st.booleans())
def test_a_formatted_trace_id_reads_back_as_itself(number: int, upper: bool) -> None:
    text = format(number, "032x")
    assert _ids.parse_trace_id(text.upper() if upper else text, any_case=upper) == text
    assert _ids.parse_trace_id(format(number, "x"), short=True) == text


def test_the_hex_alphabet_is_spelled_in_one_place() -> None:
    """No module but ``_util.ids`` spells the digits of an id: every reader and route reads ids through it."""
    src = REPO / "src" / "toolspan"
    spelled = re.compile(r"0123456789abcdef|\[0-9a-f", re.IGNORECASE)
    offenders = [
        f"{path.relative_to(src)}:{number}"
        for path in sorted(src.rglob("*.py"))
        if path.relative_to(src).as_posix() != "_util/ids.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if spelled.search(line)
    ]
    assert offenders == []
