"""The act/observe event streams (``toolspan.server._streams.events``): the calls a stream sent with no model
call that asked for them are remembered, and their traces read again for their links only when they changed
(``Unrequested.changed``), not on every page of a stream's catch-up; a trace read again for its links decodes
only its new spans."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.decodes import count_decodes
from toolspan import semconv as sc
from toolspan.bridge.model import Span
from toolspan.server._rows.cursor import ACT, Cursor
from toolspan.server._store import decoded as decoded_module
from toolspan.server._store.engines import open_store
from toolspan.server._streams.events import Unrequested, trace_links

TRACE = "5" * 32
OTHER = "6" * 32


def _span(trace_id: str, span_id: str, name: str, start: int, parent: str | None = None) -> Span:
    attrs = {sc.GEN_AI_OPERATION_NAME: name.split(maxsplit=1)[0]}
    if name.startswith("execute_tool"):
        attrs[sc.GEN_AI_TOOL_NAME] = name.split()[1]
    return Span(trace_id, span_id, parent, name, start, start + 1_000, attributes=attrs)


def test_a_remembered_calls_trace_is_read_again_only_once_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(str(tmp_path / "store.db"))
    try:
        agent = _span(TRACE, "a" * 16, "invoke_agent planner", 1_000)
        first = _span(TRACE, "b" * 16, "execute_tool search", 2_000, agent.span_id)
        second = _span(TRACE, "c" * 16, "execute_tool fetch", 5_000, agent.span_id)
        store.ingest([agent, first, _span(OTHER, "d" * 16, "invoke_agent other", 1_000)])
        unrequested = Unrequested()
        assert unrequested.changed(store) == set()  # nothing remembered: nothing to read
        unrequested.note(first, {"requested_by": None})
        asked = _span(OTHER, "e" * 16, "execute_tool search", 2_000)
        unrequested.note(asked, {"requested_by": "9" * 16})  # a model call asked for it: not remembered
        assert unrequested.traces() == [TRACE]
        assert unrequested.changed(store) == {TRACE}  # not read since its call was remembered
        assert unrequested.changed(store) == set()  # unchanged: its links are what they were
        store.ingest([second])
        assert unrequested.changed(store) == {TRACE}
        assert unrequested.changed(store) == set()
        unrequested.note(second, {"requested_by": None})  # a new call remembered: judged once read
        assert unrequested.changed(store) == {TRACE}
        # The links of a page read the page's traces, and the remembered calls' traces that changed.
        store.ingest([_span(TRACE, "f" * 16, "chat model", 6_000, agent.span_id)])
        links = trace_links(store, [], unrequested)
        assert {trace for trace, _ in links.calls} == {TRACE}
        read: list[list[str]] = []
        real = store.spans_by_trace

        def reading(trace_ids: list[str], *, keep: bool = False) -> dict[str, list[Span]]:
            read.append(list(trace_ids))
            return real(trace_ids, keep=keep)

        monkeypatch.setattr(store, "spans_by_trace", reading)
        assert set(trace_links(store, [], unrequested).calls) == set()
        assert read == []  # nothing changed: no trace read at all
    finally:
        store.close()


def test_a_live_streams_links_decode_only_the_spans_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each page of a live stream reads its traces again for their links: a growing trace decodes its new
    # spans only (those decoded are kept: ``spans_by_trace``'s ``keep``), not all of them at every page.
    decoded = count_decodes(monkeypatch, decoded_module)
    store = open_store(str(tmp_path / "store.db"))
    try:
        agent = _span(TRACE, "a" * 16, "invoke_agent planner", 1_000)
        calls = [_span(TRACE, f"{n:016x}", "execute_tool search", 2_000 + n, agent.span_id) for n in range(3)]
        store.ingest([agent, *calls])
        assert len(trace_links(store, [_row(calls[0])]).calls) == 3
        assert len(decoded) == 4
        decoded.clear()
        more = _span(TRACE, f"{9:016x}", "execute_tool fetch", 9_000, agent.span_id)
        store.ingest([more])
        assert len(trace_links(store, [_row(more)]).calls) == 4
        assert len(decoded) == 1
    finally:
        store.close()


def _row(span: Span) -> tuple[Cursor, int, Span]:
    """An event-log entry of ``span``'s act, as a stream's page holds it."""
    return Cursor(1, span.trace_id, span.span_id, ACT), ACT, span
