"""``/healthz``'s counts of the store (``_http.health``): one count shared by every probe that can share it,
and every answer holding every write committed before the request, on a real SQLite store."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolspan.bridge.model import Span
from toolspan.server import open_store
from toolspan.server._http.health import StoreCounts
from toolspan.server._store.api import StoreApi

TRACE = "cd" * 16


def _span(n: int) -> Span:
    return Span(TRACE, f"{n:016x}", None, f"s{n}", 10, 20)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StoreApi]:
    store = open_store(str(tmp_path / "toolspan.db"))
    try:
        yield store
    finally:
        store.close()


def test_probes_at_once_share_one_count(store: StoreApi) -> None:
    store.ingest([_span(1), _span(2)])
    counts = StoreCounts(store)

    async def probes() -> list[dict[str, int]]:
        return await asyncio.gather(*(counts.get() for _ in range(20)))

    answers = asyncio.run(probes())
    assert answers == [{"spans": 2, "traces": 1, "log_records": 0}] * 20
    assert counts.scans == 1


def test_a_count_is_reused_until_this_process_writes(store: StoreApi) -> None:
    counts = StoreCounts(store)

    async def probes() -> list[dict[str, int]]:
        first = await counts.get()
        again = await counts.get()
        store.ingest([_span(1)])
        after = await counts.get()
        return [first, again, after]

    first, again, after = asyncio.run(probes())
    assert first == again == {"spans": 0, "traces": 0, "log_records": 0}
    assert after == {"spans": 1, "traces": 1, "log_records": 0}
    assert counts.scans == 2


def test_a_count_older_than_its_age_is_made_again(store: StoreApi) -> None:
    # Another replica's writes are not this process's: only a count's age bounds how long they go unseen.
    counts = StoreCounts(store, max_age_s=0)

    async def probes() -> None:
        await counts.get()
        await counts.get()

    asyncio.run(probes())
    assert counts.scans == 2


def test_a_probe_that_came_after_a_write_does_not_take_a_count_begun_before_it(
    store: StoreApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first count reads the store, then is held until a span has been stored and a second probe came.
    counted = threading.Event()
    release = threading.Event()
    real = store.counts

    def held() -> dict[str, int]:
        found = real()
        counted.set()
        release.wait(10)
        return found

    monkeypatch.setattr(store, "counts", held)
    counts = StoreCounts(store)

    async def probes() -> tuple[dict[str, int], dict[str, int]]:
        first = asyncio.ensure_future(counts.get())
        await asyncio.to_thread(counted.wait, 10)
        store.ingest([_span(1)])
        second = asyncio.ensure_future(counts.get())
        await asyncio.sleep(0)  # (the second probe is waiting on the first count)
        monkeypatch.setattr(store, "counts", real)
        release.set()
        return await first, await second

    first, second = asyncio.run(probes())
    assert first["spans"] == 0  # it came before the write
    assert second["spans"] == 1
    assert counts.scans == 2


def test_counts_follow_one_another_no_sooner_than_their_spacing(store: StoreApi) -> None:
    # A spacing of a billion times a count's duration: the count after a write waits (for ever, here).
    counts = StoreCounts(store, spacing=1e9)

    async def probes() -> None:
        await counts.get()
        store.ingest([_span(1)])
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(counts.get(), 0.5)

    asyncio.run(probes())
    assert counts.scans == 1


def test_a_failed_count_fails_every_probe_waiting_and_the_next_probe_counts_again(
    store: StoreApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = store.counts

    def broken() -> dict[str, int]:
        raise OSError("disk gone")

    monkeypatch.setattr(store, "counts", broken)
    counts = StoreCounts(store)

    async def probes() -> dict[str, int]:
        failed = await asyncio.gather(*(counts.get() for _ in range(3)), return_exceptions=True)
        assert [str(e) for e in failed] == ["disk gone"] * 3
        monkeypatch.setattr(store, "counts", real)
        return await counts.get()

    assert asyncio.run(probes()) == {"spans": 0, "traces": 0, "log_records": 0}
    assert counts.scans == 1
