"""Python literals (``str()`` of a value, as Semantic Kernel and Agno record tool results): parsed with
``ast.literal_eval`` within length and depth limits, JSON values only, never evaluated."""

from __future__ import annotations

from typing import Any

import pytest

from toolspan.bridge.facts._pyliteral import MAX_DEPTH, MAX_LENGTH, NotALiteral, python_literal
from toolspan.bridge.facts._requests import normal_result


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("{'city': 'Paris', 'temp_c': 18}", {"city": "Paris", "temp_c": 18}),
        ("[1, (2, 3), None, True, 'x']", [1, [2, 3], None, True, "x"]),
        ("{'a': {'b': [1.5, -2]}}", {"a": {"b": [1.5, -2]}}),
        ("{'q': 'a \\'quoted\\' ] bracket'}", {"q": "a 'quoted' ] bracket"}),
    ],
)
def test_a_literal_of_json_values_is_read(text: str, value: Any) -> None:
    assert python_literal(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('touch /tmp/toolspan-pwned')",  # a call: never run
        "{'a': (lambda: 1)()}",
        "{1, 2}",  # a set: JSON has none
        "{1: 'x'}",  # a key that is not a string
        "b'bytes'",
        "1j",
        "{'unclosed': [1, 2}",
    ],
)
def test_anything_but_a_literal_of_json_values_is_refused(text: str) -> None:
    with pytest.raises(NotALiteral):
        python_literal(text)


def test_limits_are_checked_on_the_text_before_it_is_parsed() -> None:
    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    with pytest.raises(NotALiteral, match="too deep"):
        python_literal(deep)
    assert python_literal("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(NotALiteral, match="too long"):
        python_literal("[" + "1," * MAX_LENGTH + "]")
    # Far past the parser's own recursion limit: refused by the depth check, no RecursionError.
    with pytest.raises(NotALiteral):
        python_literal("[" * 100_000)


def test_a_tool_result_written_as_a_literal_becomes_its_value_and_other_text_stays_text() -> None:
    assert normal_result("{'city': 'Paris'}") == {"city": "Paris"}
    assert normal_result('{"city": "Paris"}') == {"city": "Paris"}
    assert normal_result("[not, a literal]") == "[not, a literal]"
    assert normal_result("__import__('os')") == "__import__('os')"
    assert normal_result("{1, 2}") == "{1, 2}"
