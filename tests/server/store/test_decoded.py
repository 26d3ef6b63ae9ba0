"""The decoded spans a store keeps for its next read (``_store.decoded``): exact, decoded once, kept only
for the reads that ask, bounded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.decodes import count_decodes
from toolspan.bridge.model import Span
from toolspan.server import open_store
from toolspan.server._rows.codec import decode, encode
from toolspan.server._store import decoded as module
from toolspan.server._store.decoded import COST, DecodedSpans

TRACE = "ab" * 16


def _span(n: int, end: int | None = 20, **attributes: Any) -> Span:
    return Span(TRACE, f"{n:016x}", None, f"s{n}", 10, end, attributes=attributes)


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[str | bytes]:
    """Every form the module decodes, in order."""
    return count_decodes(monkeypatch, module)


def test_a_form_read_again_is_not_decoded_again_and_reads_as_decoded(decodes: list[str | bytes]) -> None:
    forms = [encode(_span(n, tool="x" * n)) for n in range(1, 4)]
    kept = DecodedSpans()
    first = kept.decode(forms, keep=True)
    assert first == [decode(f) for f in forms]
    assert decodes == forms
    decodes.clear()
    again = kept.decode(list(reversed(forms)), keep=True)
    assert decodes == []
    assert again == list(reversed(first))
    assert all(a is b for a, b in zip(again, reversed(first), strict=True))
    assert kept.stats() == {"kept": 3, "bytes": sum(len(f) for f in forms) * COST, "hits": 3, "misses": 3}


def test_a_changed_span_is_a_new_form_and_only_it_is_decoded(decodes: list[str | bytes]) -> None:
    kept = DecodedSpans()
    running = encode(_span(1, end=None))
    other = encode(_span(2))
    kept.decode([running, other], keep=True)
    decodes.clear()
    ended = encode(_span(1, end=30))
    spans = kept.decode([ended, other], keep=True)
    assert decodes == [ended]
    assert [s.end_ns for s in spans] == [30, 20]


def test_a_read_with_nothing_to_take_or_keep_decodes_every_form_and_counts_nothing(
    decodes: list[str | bytes],
) -> None:
    forms = [encode(_span(n)) for n in (1, 2)]
    kept = DecodedSpans()
    assert kept.decode(forms) == [decode(f) for f in forms]
    assert decodes == forms
    assert kept.stats() == {"kept": 0, "bytes": 0, "hits": 0, "misses": 0}


def test_an_events_page_decodes_a_span_once_for_its_act_and_its_observe_and_keeps_it_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolspan.server._rows.cursor import Cursor
    from toolspan.server._store import storage

    seen = count_decodes(monkeypatch, storage)
    store = open_store(str(tmp_path / "store.db"))
    try:
        tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}
        store.ingest([_span(1, **tool)])
        (act, observe) = store.events_after(Cursor(0), trace_id=None, conversation_id=None, limit=10)
        assert (act[1], observe[1]) == (0, 1)
        assert act[2] is observe[2]
        assert len(seen) == 1
        assert store.decoded.stats()["kept"] == 0
    finally:
        store.close()


def test_nothing_is_kept_at_zero_bytes(decodes: list[str | bytes]) -> None:
    kept = DecodedSpans(0)
    form = encode(_span(1))
    kept.decode([form], keep=True)
    kept.decode([form], keep=True)
    assert decodes == [form, form]
    assert kept.stats()["kept"] == 0


def test_the_least_recently_read_go_first_past_the_bound(decodes: list[str | bytes]) -> None:
    a, b, c = (encode(_span(n)) for n in (1, 2, 3))
    assert len(a) == len(b) == len(c)
    kept = DecodedSpans(2 * len(a) * COST)  # room for two
    kept.decode([a, b], keep=True)
    kept.decode([a], keep=True)  # a is now read more recently than b
    kept.decode([c], keep=True)  # b goes
    decodes.clear()
    kept.decode([a, c], keep=True)
    assert decodes == []
    kept.decode([b], keep=True)
    assert decodes == [b]
    assert kept.stats()["bytes"] == 2 * len(a) * COST
    # A form larger than the whole bound is decoded, and not kept.
    big = encode(_span(4, tool="x" * (2 * len(a))))
    assert kept.decode([big], keep=True) == [decode(big)]
    assert kept.stats()["kept"] <= 2
    assert kept.stats()["bytes"] <= 2 * len(a) * COST


def test_a_read_that_does_not_keep_takes_what_is_kept_and_keeps_nothing(decodes: list[str | bytes]) -> None:
    live, other = encode(_span(1)), encode(_span(2))
    kept = DecodedSpans()
    (first,) = kept.decode([live], keep=True)
    decodes.clear()
    spans = kept.decode([live, other])
    assert spans[0] is first
    assert decodes == [other]
    kept.decode([other])
    assert decodes == [other, other]
    assert kept.stats() == {"kept": 1, "bytes": len(live) * COST, "hits": 1, "misses": 3}


def test_a_store_keeps_what_a_live_read_decoded_and_decodes_only_what_changed(
    tmp_path: Path, decodes: list[str | bytes]
) -> None:
    store = open_store(str(tmp_path / "store.db"))
    try:
        store.ingest([_span(1, end=None), _span(2), _span(3)])
        once = store.trace_spans(TRACE)  # a view's read: nothing kept
        assert store.trace_spans(TRACE) == once
        assert len(decodes) == 6
        assert store.decoded.stats()["kept"] == 0
        decodes.clear()
        first = store.trace_spans(TRACE, keep=True)  # a live page's or stream's read
        assert store.trace_spans(TRACE, keep=True) == first == once
        assert store.trace_spans(TRACE) == first  # any read takes what is kept
        assert len(decodes) == 3
        decodes.clear()
        store.ingest([_span(1, end=40)])  # the running span ends: its stored form changes
        spans = {s.span_id: s for s in store.trace_spans(TRACE, keep=True)}
        assert len(decodes) == 1
        assert spans[f"{1:016x}"].end_ns == 40
        assert store.conversation_spans("none", keep=True) == []
    finally:
        store.close()
