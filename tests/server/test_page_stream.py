"""The live trace page's stream (``/api/traces/{id}/page/stream``) of a real ``toolspan serve``: the whole
document first, then one delta per change, each tagged with the document it gives; a run exported record by
record (each tool's pending record, then its end) is followed to exactly the page ``/api/traces/{id}/page``
then gives; a client resumes from its tag."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from tests.support.bridge_data import scenario
from tests.support.formats import otlp_proto_request
from tests.support.server import Server, SseEvent, running_server, sse_stream
from toolspan.bridge.model import Span
from toolspan.bridge.views import apply_page_delta
from toolspan.server._streams.page import PageDocs, PageVersion, page_tag, version_of


def _records(spans: list[Span]) -> list[Span]:
    """The records of a run as an application with pending records exports them: each span's pending
    record when it starts, its ended record when it ends."""
    timed = [(s.start_ns, 0, dataclasses.replace(s, end_ns=None)) for s in spans]
    timed += [(s.end_ns, 1, s) for s in spans if s.end_ns is not None]
    return [record for _, _, record in sorted(timed, key=lambda t: (t[0], t[1]))]


def _export(server: Server, record: Span) -> None:
    status, _, body = server.post_otlp(bytes(otlp_proto_request([record]).SerializeToString()))
    assert status == 200, body


def _page(server: Server, trace_id: str) -> tuple[str, dict[str, object]]:
    """The page's data now and its tag (its ``ETag``)."""
    status, headers, body = server.request("GET", f"/api/traces/{trace_id}/page")
    assert status == 200, body
    etag = {k.lower(): v for k, v in headers.items()}["etag"]
    assert etag == f'"{page_tag(body)}"'
    return page_tag(body), json.loads(body)


def _until(events: Iterator[SseEvent], tag: str, doc: dict[str, object]) -> dict[str, object]:
    """The document a page holding ``doc`` holds once it has applied the deltas up to the one tagged
    ``tag``."""
    for event in events:
        assert event.event == "delta", event  # after the first, only what changed
        doc = apply_page_delta(doc, event.json())
        if event.id == tag:
            return doc
    raise AssertionError("the stream ended")


@pytest.mark.processes
def test_a_run_exported_record_by_record_is_followed_to_its_page(tmp_path: Path) -> None:
    spans = scenario()
    trace_id = spans[0].trace_id
    records = _records([s for s in spans if s.trace_id == trace_id])
    with running_server(tmp_path) as server:
        _export(server, records[0])
        events = sse_stream(server, f"/api/traces/{trace_id}/page/stream")
        first = next(events)
        assert first.event == "page"  # a client holding nothing gets the whole document
        doc = first.json()
        assert first.id == _page(server, trace_id)[0]
        for record in records[1:]:
            _export(server, record)
            tag, now = _page(server, trace_id)
            doc = _until(events, tag, doc)
            assert doc == now  # each tag names the document its delta gives
        tag, final = _page(server, trace_id)
        assert doc == final

        # A client holding the current document gets nothing until the trace changes, then the delta.
        resumed = sse_stream(server, f"/api/traces/{trace_id}/page/stream?version={tag}")
        extra = dataclasses.replace(spans[1], span_id="f" * 16, name="late")
        _export(server, extra)
        new_tag, new = _page(server, trace_id)
        event = next(resumed)
        assert (event.event, event.id) == ("delta", new_tag)
        assert apply_page_delta(final, event.json()) == new

        # From a document this server kept (the one before): the delta from it; from one it does not know, the
        # whole document.
        back = next(sse_stream(server, f"/api/traces/{trace_id}/page/stream", last_event_id=tag))
        assert (back.event, back.id) == ("delta", new_tag)
        assert apply_page_delta(final, back.json()) == new
        unknown = next(sse_stream(server, f"/api/traces/{trace_id}/page/stream", last_event_id="0" * 32))
        assert (unknown.event, unknown.id, unknown.json()) == ("page", new_tag, new)


def test_streams_waking_together_build_a_version_once_even_when_one_hangs_up() -> None:
    """``PageDocs``: three streams of one trace ask for the same version at once: one build, the same
    document for all, also when the stream that started the build is cancelled (its client hung up); a new
    version is built again, and the versions kept resume by tag."""

    async def run() -> None:
        docs = PageDocs()
        builds = 0
        release = asyncio.Event()

        def builder(n: int) -> Callable[[], Awaitable[PageVersion | None]]:
            async def build() -> PageVersion | None:
                nonlocal builds
                builds += 1
                await release.wait()
                return version_of({"trace_id": "t", "n": n})

            return build

        first = asyncio.ensure_future(docs.current("t", (1,), builder(1)))
        others = [asyncio.ensure_future(docs.current("t", (1,), builder(1))) for _ in range(2)]
        await asyncio.sleep(0)
        first.cancel()
        release.set()
        got = await asyncio.gather(*others)
        assert builds == 1
        assert got[0] is got[1]
        assert got[0] is not None
        assert got[0].doc == {"trace_id": "t", "n": 1}
        assert await docs.current("t", (1,), builder(1)) is got[0]  # kept: not built again
        newer = await docs.current("t", (2,), builder(2))
        assert builds == 2
        assert newer is not None
        assert docs.by_tag("t", got[0].tag) is got[0]
        assert docs.by_tag("t", newer.tag) is newer

    asyncio.run(run())


def test_the_documents_kept_to_resume_from_are_bounded_by_their_bytes() -> None:
    async def run() -> None:
        one = version_of({"trace_id": "a", "pad": "x" * 100})
        docs = PageDocs(max_bytes=2 * len(one.body) + 10)

        def made(page: PageVersion) -> Callable[[], Awaitable[PageVersion | None]]:
            async def build() -> PageVersion | None:
                return page

            return build

        pages = [version_of({"trace_id": t, "pad": "x" * 100}) for t in ("a", "b", "c")]
        for n, page in enumerate(pages):
            assert await docs.current(page.doc["trace_id"], (n,), made(page)) is page
        assert docs.by_tag("a", pages[0].tag) is None  # the least recently built went first
        assert docs.by_tag("b", pages[1].tag) is pages[1]
        assert docs.by_tag("c", pages[2].tag) is pages[2]

    asyncio.run(run())
