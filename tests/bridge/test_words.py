"""The JSON Schemas of the bridge's formats spell the decision words and the tool states as their one home
does (``toolspan._util.words``, ``semconv``): a word added or renamed there and not here fails this test,
naming the schema and the place."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from toolspan import semconv
from toolspan._util.words import DECISIONS
from toolspan.bridge.views import SCHEMA_NAMES, load_schema

# The states a tool call ends in (the AG-UI stream's tool end carries only those).
ENDED = set(semconv.TOOL_STATES) - {
    semconv.STATE_PENDING,
    semconv.STATE_RUNNING,
    semconv.STATE_AWAITING_APPROVAL,
}


def _enums(value: Any, where: str = "") -> Iterator[tuple[str, str, list[Any]]]:
    """``(where, the key holding it, enum)`` of every enum in ``value``."""
    if isinstance(value, dict):
        for key, child in value.items():
            if isinstance(child, dict) and isinstance(child.get("enum"), list):
                yield f"{where}/{key}", key, child["enum"]
            yield from _enums(child, f"{where}/{key}")
    elif isinstance(value, list):
        for n, child in enumerate(value):
            yield from _enums(child, f"{where}/{n}")


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_each_schema_spells_the_decisions_and_states_of_their_one_home(name: str) -> None:
    decisions = states = 0
    for where, key, enum in _enums(load_schema(name)):
        words = {w for w in enum if w is not None}
        if key == "decision":
            decisions += 1
            assert words == set(DECISIONS), (name, where, enum)
        elif key in ("state", "propertyNames"):
            states += 1
            assert words in (set(semconv.TOOL_STATES), ENDED), (name, where, enum)
    # The schemas that carry either do name them (the walk found what it checks).
    if name in ("page", "progress", "ag-ui"):
        assert decisions, name
    if name in ("events", "page", "plans", "progress", "tree", "ag-ui"):
        assert states, name
