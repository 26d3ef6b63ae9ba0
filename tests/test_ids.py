"""execution_id / tool_call_id formats."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from toolspan import _ids

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
