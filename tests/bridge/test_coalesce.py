"""Merging and ordering of span records before any view (``toolspan.bridge._coalesce``)."""

from __future__ import annotations

import dataclasses
import random

from tests.support.bridge_data import TRACE_2, permission, sid, span
from toolspan.bridge._coalesce import coalesce, duplicate_flags


def test_open_record_merges_into_its_completion() -> None:
    act = span(1, None, "execute_tool t", 0, None, {"a": 1, "only.act": True}, events=(permission(1),))
    done = span(1, None, "execute_tool t", 0, 5, {"a": 2, "b": 3}, events=(permission(2, "allow"),))
    (merged,) = coalesce([done, act])
    assert merged.end_ns == done.end_ns
    assert dict(merged.attributes) == {"a": 2, "b": 3, "only.act": True}
    assert merged.events == (permission(1), permission(2, "allow"))


def test_identical_records_collapse_even_from_different_files() -> None:
    a = dataclasses.replace(span(1, None, "x", 0, 5, {"k": "v"}), origin="b.json:3")
    b = dataclasses.replace(a, origin="a.json:9")
    assert coalesce([a, b]) == [b]


def test_conflicting_records_are_all_kept_in_a_stable_order() -> None:
    a = span(1, None, "x", 0, 5, {"k": "v"})
    b = span(1, None, "y", 0, 6, {"k": "w"})
    c = span(1, None, "z", 0, None, {})  # an open record merges into the first completed one only
    out = coalesce([b, c, a])
    assert [s.name for s in out] == ["x", "y"]
    assert out == coalesce([a, b, c]) == coalesce([c, a, b])
    assert duplicate_flags(out) == [False, True]


def test_sorted_by_start_then_span_id_and_same_id_in_two_traces_is_two_spans() -> None:
    spans = [
        span(3, None, "c", 5, 6, {}),
        span(2, None, "b", 1, 2, {}),
        span(1, None, "a", 1, 2, {}),
        span(1, None, "a", 1, 2, {}, trace=TRACE_2),
    ]
    shuffled = list(spans)
    random.Random(1).shuffle(shuffled)
    out = coalesce(shuffled)
    assert [(s.span_id, s.trace_id[-1]) for s in out] == [
        (sid(1), "1"),
        (sid(1), "2"),
        (sid(2), "1"),
        (sid(3), "1"),
    ]
    assert duplicate_flags(out) == [False, False, False, False]


def test_pending_records_of_a_running_span_merge_into_one_open_span() -> None:
    start = span(1, None, "execute_tool t", 0, None, {"a": 1})
    waiting = span(1, None, "execute_tool t", 0, None, {"a": 1}, events=(permission(1),))
    allowed = span(
        1, None, "execute_tool t", 0, None, {"a": 1}, events=(permission(1), permission(4, "allow"))
    )
    for order in ([start, waiting, allowed], [allowed, start, waiting], [waiting, allowed, start]):
        assert coalesce(order) == [allowed]
    assert coalesce([start, waiting]) == [waiting]
    # with the ended span: one span, every event once
    done = span(
        1, None, "execute_tool t", 0, 9, {"a": 1, "b": 2}, events=(permission(1), permission(4, "allow"))
    )
    assert coalesce([waiting, done, start]) == [done]


def test_open_records_that_disagree_on_the_span_itself_stay_apart() -> None:
    a = span(1, None, "execute_tool t", 0, None, {}, events=(permission(1),))
    b = span(1, None, "execute_tool u", 0, None, {})
    merged = coalesce([a, b])
    assert sorted(s.name for s in merged) == ["execute_tool t", "execute_tool u"]
    assert duplicate_flags(merged) == [False, True]
