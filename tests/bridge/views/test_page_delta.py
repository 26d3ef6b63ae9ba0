"""What changed between two page documents of a trace (``page_delta``), applied (``apply_page_delta``): for
traces grown span by span, random and real, applying each delta to the document before gives exactly the
document after, keyed by span id, never by position."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings

from tests.support import corpus
from tests.support.bridge_data import TRACE_1, span, span_forests, tool_attrs, validate
from toolspan import semconv as sc
from toolspan.bridge.model import Span
from toolspan.bridge.views import apply_page_delta, page_delta, step_keys, to_page


def _grown(spans: list[Span]) -> tuple[list[Any], list[Any]]:
    """Each span added in turn to the spans before it, then the run ended: the documents the deltas (each
    through JSON, valid against its schema) gave, and the documents built from the spans."""
    doc = to_page([], live=True)
    built = [to_page(spans[:n], live=True) for n in range(1, len(spans) + 1)] + [to_page(spans, live=False)]
    given = []
    for new in built:
        delta = json.loads(json.dumps(page_delta(doc, new)))
        validate("page-delta", delta)
        given.append(apply_page_delta(doc, delta))
        doc = new
    return given, built


@settings(max_examples=200, deadline=None)
@given(span_forests())
def test_random_traces_grown_span_by_span(data: tuple[list[Span], int]) -> None:
    spans, _ = data
    by_trace: dict[str, list[Span]] = {}
    for s in spans:
        by_trace.setdefault(s.trace_id, []).append(s)
    for trace in by_trace.values():
        given, built = _grown(trace)
        assert given == built


@pytest.mark.parametrize("setup", corpus.SETUPS)
def test_corpus_runs_grown_in_export_order(setup: str) -> None:
    by_trace: dict[str, list[Span]] = {}
    for s in corpus.spans(setup, "traces.jsonl"):
        by_trace.setdefault(s.trace_id, []).append(s)
    assert by_trace
    for trace in by_trace.values():
        given, built = _grown(trace)
        assert given == built


def _tool(n: int, parent: int | None, start: int, end: int | None, name: str = "t") -> Span:
    attrs = tool_attrs(n, name, {"n": n}, None if end is None else n, state=sc.STATE_COMPLETED)
    return span(n, parent, name, start, end, attrs, trace=TRACE_1)


def test_a_finished_call_is_its_changed_fields_only() -> None:
    root = span(1, None, "root", 0, None, {}, trace=TRACE_1)
    old = to_page([root, _tool(2, 1, 1, None)], live=True)
    new = to_page([root, _tool(2, 1, 1, 5)], live=True)
    delta = page_delta(old, new)
    assert delta["added"] == []
    assert delta["removed"] == []
    (change,) = [c for c in delta["changed"] if c["key"] == new["steps"][1]["id"]]
    assert change["set"]["state"] == sc.STATE_COMPLETED
    assert change["set"]["dur_us"] == 4000
    assert "label" not in change["set"]  # unchanged fields stay out
    assert "input" not in change["set"]
    assert apply_page_delta(old, delta) == new


def test_a_step_inserted_before_others_is_placed_by_key_and_parents_stay_keys() -> None:
    # The parent ends (is exported) after its child: it comes first in the new document, every index moves.
    child = _tool(2, 1, 5, 8)
    old = to_page([child], live=True)
    new = to_page([child, span(1, None, "root", 0, 10, {}, trace=TRACE_1)], live=True)
    delta = page_delta(old, new)
    root_key, child_key = step_keys(new["steps"])
    assert [a["key"] for a in delta["added"]] == [root_key]
    assert delta["added"][0]["after"] is None
    assert "order" not in delta
    (change,) = [c for c in delta["changed"] if c["key"] == child_key]
    assert change["set"]["parent"] == root_key  # a key, not the index 0
    assert apply_page_delta(old, delta) == new


def test_a_duplicate_record_has_its_own_key() -> None:
    a = _tool(2, None, 1, 3, "a")
    b = span(2, None, "b", 1, 4, {}, trace=TRACE_1)  # the same span id, another record: both are kept
    new = to_page([a, b], live=True)
    keys = step_keys(new["steps"])
    assert keys == [keys[0], keys[0] + "#2"]
    old = to_page([a], live=True)
    assert apply_page_delta(old, page_delta(old, new)) == new


def test_unchanged_document_gives_an_empty_delta() -> None:
    doc = to_page([_tool(2, None, 1, 3)], live=True)
    delta = page_delta(doc, doc)
    assert delta == {
        "schema_version": doc["schema_version"],
        "trace_id": doc["trace_id"],
        "set": {},
        "added": [],
        "changed": [],
        "removed": [],
    }


def test_old_document_is_left_as_it_is() -> None:
    old = to_page([_tool(2, None, 1, None)], live=True)
    kept: Any = json.loads(json.dumps(old))
    apply_page_delta(old, page_delta(old, to_page([_tool(2, None, 1, 3)], live=True)))
    assert old == kept
