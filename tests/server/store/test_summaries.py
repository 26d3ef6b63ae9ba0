"""A trace's summary folded from its new rows (``_store.summaries.fold``): the root is the parentless span
that starts first, then the one with the smaller span id, whatever order the rows come in."""

from __future__ import annotations

import itertools

import pytest

from toolspan.server._rows.spans import Row
from toolspan.server._store.summaries import ROOT, SPANS, START, fold

TRACE = "ab" * 16


def _row(span_id: str, name: str, start: int, parent: str | None = None) -> Row:
    return Row(TRACE, span_id, parent, name, start, start + 10, 0, None, None, 0, None, None, b"")


ROWS = [
    _row("0000000000000003", "late root", 300),
    _row("0000000000000002", "tied root, larger id", 100),
    _row("0000000000000001", "tied root, smaller id", 100),
    _row("0000000000000004", "child starting first", 50, parent="0000000000000003"),
]


@pytest.mark.parametrize("order", list(itertools.permutations(range(len(ROWS)))))
def test_the_root_is_the_first_parentless_span_then_the_smaller_id_in_any_order(
    order: tuple[int, ...],
) -> None:
    folded = fold(ROWS[i] for i in order)[TRACE]
    assert folded[ROOT] == (100, "0000000000000001", "tied root, smaller id", True)
    assert (folded[START], folded[SPANS]) == (50, 4)


def test_a_trace_without_a_parentless_span_has_no_root() -> None:
    folded = fold([_row("0000000000000004", "child", 50, parent="0000000000000003")])[TRACE]
    assert folded[ROOT] is None
