"""What a view stream reads each time it wakes (``_streams.readers``): a live trace or conversation read again
decodes only its new and changed spans."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.support.decodes import count_decodes
from toolspan.bridge.model import Span
from toolspan.server import open_store
from toolspan.server._store import decoded as module
from toolspan.server._streams.readers import conversation_reader, trace_reader

TRACE = "cd" * 16


def _span(n: int, end: int | None = 20) -> Span:
    attributes = {"gen_ai.conversation.id": "conv"}
    return Span(TRACE, f"{n:016x}", None, f"s{n}", 10, end, attributes=attributes)


@pytest.mark.parametrize("which", ["trace", "conversation"])
def test_a_stream_woken_by_a_commit_decodes_only_the_spans_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    decoded = count_decodes(monkeypatch, module)
    store = open_store(str(tmp_path / "store.db"))
    try:
        store.ingest([_span(1, end=None), _span(2), _span(3)])
        if which == "trace":
            read = trace_reader(store, TRACE, 60.0, None)
        else:
            read = conversation_reader(store, "conv", 60.0)
        spans, _, _ = asyncio.run(read())
        assert len(spans) == 3
        assert len(decoded) == 3
        decoded.clear()
        store.ingest([_span(1, end=40), _span(4)])  # one span ends, one more starts
        spans, _, _ = asyncio.run(read())
        assert sorted((s.span_id, s.end_ns) for s in spans) == [
            (f"{1:016x}", 40),
            (f"{2:016x}", 20),
            (f"{3:016x}", 20),
            (f"{4:016x}", 20),
        ]
        assert len(decoded) == 2
    finally:
        store.close()
