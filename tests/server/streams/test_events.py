"""The act/observe event streams (``toolspan.server._streams.events``): the calls a stream sent with no model
call that asked for them are remembered, and their traces read again for their links only when they changed
(``Unrequested.changed``), not on every page of a stream's catch-up."""

from __future__ import annotations

from pathlib import Path

from toolspan import semconv as sc
from toolspan.bridge.model import Span
from toolspan.server._store.engines import open_store
from toolspan.server._streams.events import Unrequested, trace_links

TRACE = "5" * 32
OTHER = "6" * 32


def _span(trace_id: str, span_id: str, name: str, start: int, parent: str | None = None) -> Span:
    attrs = {sc.GEN_AI_OPERATION_NAME: name.split(maxsplit=1)[0]}
    if name.startswith("execute_tool"):
        attrs[sc.GEN_AI_TOOL_NAME] = name.split()[1]
    return Span(trace_id, span_id, parent, name, start, start + 1_000, attributes=attrs)


def test_a_remembered_calls_trace_is_read_again_only_once_it_changed(tmp_path: Path) -> None:
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
        assert set(trace_links(store, [], unrequested).calls) == set()
    finally:
        store.close()
