"""A large page document on the page stream (``/api/traces/{id}/page/stream``) comes in parts: ``event:
page-part`` events (no ``id``), each a JSON array of the next steps or conversation items, then ``event:
page`` with the rest of the document and the tag as its ``id``. Put together they are exactly the document
``/api/traces/{id}/page`` answers; a client that hangs up among them resumes from what it held before and is
sent them all again. In process, through the application, with the part size lowered."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.asgi import AsgiClient
from toolspan.bridge.model import Span
from toolspan.page import page_json
from toolspan.server import ServerConfig, build_app, open_store
from toolspan.server._streams.page import PageDocs, page_tag, version_of, whole_events

TRACE = "5ba1a5ba1a5ba1a5ba1a5ba1a5ba1a00"
ROOT = "00f067aa0ba902b7"
STREAM = f"/api/traces/{TRACE}/page/stream"
PART_BYTES = 2048
TOOLS = 60


@dataclass(frozen=True)
class Event:
    kind: str
    id: str | None
    data: str


def _events(body: bytes) -> list[Event]:
    """The events of an SSE body (comments left out), with the ``id`` each carries itself."""
    out = []
    for block in body.decode("utf-8").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            name, _, value = line.partition(": ")
            if name in ("id", "event", "data"):
                fields[name] = value
        if "data" in fields:
            out.append(Event(fields.get("event", "message"), fields.get("id"), fields["data"]))
    return out


def _run() -> list[Span]:
    agent = Span(
        trace_id=TRACE,
        span_id=ROOT,
        parent_span_id=None,
        name="invoke_agent planner",
        start_ns=1_000,
        end_ns=10_000_000,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "conv-1"},
    )
    tools = [
        Span(
            trace_id=TRACE,
            span_id=f"{k + 1:016x}",
            parent_span_id=ROOT,
            name="execute_tool lookup",
            start_ns=2_000 + 1_000 * k,
            end_ns=2_500 + 1_000 * k,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup",
                "gen_ai.tool.call.id": f"call_{k}",
                "gen_ai.tool.call.arguments": json.dumps({"city": f"city-{k}", "pad": "\u00e9" * (10 * k)}),
            },
        )
        for k in range(TOOLS)
    ]
    return [agent, *tools]


class Served:
    def __init__(self, tmp_path: Path) -> None:
        self.store = open_store(str(tmp_path / "store.db"))
        app, self.state = build_app(ServerConfig(db=self.store.path, parse_workers=0), self.store)
        self.state.pages = PageDocs(part_bytes=PART_BYTES)
        self.client = AsgiClient(app)

    def page(self) -> tuple[bytes, str]:
        answer = self.client.request("GET", f"/api/traces/{TRACE}/page")
        assert answer.status == 200, answer.body[:300]
        return answer.body, answer.headers["etag"]

    def stream(self, headers: dict[str, str] | None = None, parts: int | None = None) -> list[Event]:
        """The page stream's events up to its first ``event: page`` (``parts``: the client hangs up after
        that many ``event: page-part`` instead)."""

        def enough(body: bytes) -> bool:
            if parts is not None:
                return body.count(b"event: page-part\n") >= parts and body.endswith(b"\n\n")
            return b"event: page\n" in body and body.endswith(b"\n\n")

        answer = self.client.request("GET", STREAM, headers=headers or {}, until=enough)
        assert answer.status == 200, answer.body[:300]
        return _events(answer.body)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    s = Served(tmp_path)
    s.store.ingest(_run())
    with s.client:
        yield s
    s.store.close()


def _assemble(events: list[Event]) -> dict[str, Any]:
    """What a page puts together from a stream's events: the parts, then the rest (``event: page``)."""
    *parts, last = events
    assert [e.kind for e in parts] == ["page-part"] * len(parts)
    assert last.kind == "page"
    items = [json.loads(p.data) for p in parts]
    doc: dict[str, Any] = json.loads(last.data)
    for key in ("steps", "conversation"):
        n = doc[key]["parts"]
        doc[key] = [item for part in items[:n] for item in part]
        items = items[n:]
    assert items == []  # no part left over
    return doc


def test_a_large_document_comes_in_parts_that_make_exactly_the_page(served: Served) -> None:
    body, etag = served.page()
    assert len(body) > 4 * PART_BYTES  # several parts
    events = served.stream()
    parts = events[:-1]
    assert len(parts) >= 4
    # Each part holds the next items, a JSON array of at most about PART_BYTES of text (an item more than
    # that is a part of its own), and carries no id: only the whole document's event names what the client
    # holds.
    for part in parts:
        items = json.loads(part.data)
        assert isinstance(items, list)
        assert items
        assert part.id is None
        assert len(part.data.encode("utf-8")) <= PART_BYTES or len(items) == 1
    doc = _assemble(events)
    assert doc == json.loads(body)
    assert page_json(doc).encode("utf-8") == body  # the same JSON text: the tag is the page's ETag
    assert events[-1].id == page_tag(body)
    assert etag == f'"{events[-1].id}"'
    rest = json.loads(events[-1].data)
    assert rest["steps"]["parts"] >= 2
    assert rest["conversation"]["parts"] >= 1


def test_a_client_that_hangs_up_among_the_parts_is_sent_them_all_again(served: Served) -> None:
    whole = served.stream()
    tag = whole[-1].id
    assert tag is not None
    # A first screen (no version) is cut off after two parts: they carried no id, so its EventSource
    # resumes without a Last-Event-ID, and the stream starts the document over.
    cut = served.stream(parts=2)
    assert 2 <= len(cut) < len(whole) - 1
    assert all((e.kind, e.id) == ("page-part", None) for e in cut)
    again = served.stream()
    assert again == whole
    # A client holding a document this server does not keep, cut off the same way, resumes with that
    # document's tag still: it is sent the whole document in parts again.
    unknown = {"Last-Event-ID": "0" * 32}
    cut = served.stream(unknown, parts=1)
    assert 1 <= len(cut) < len(whole) - 1
    assert all((e.kind, e.id) == ("page-part", None) for e in cut)
    assert served.stream(unknown) == whole


def test_a_small_document_is_one_event_and_a_large_item_is_a_part_of_its_own() -> None:
    small = version_of({"trace_id": "t", "steps": [{"id": "a"}], "conversation": []})
    (event,) = whole_events(small, part_bytes=len(small.body))
    assert event == b"id: %s\nevent: page\ndata: %s\n\n" % (small.tag.encode(), small.body)
    big = version_of({"trace_id": "t", "steps": [{"id": "a", "pad": "x" * 500}, {"id": "b"}, {"id": "c"}]})
    events = whole_events(big, part_bytes=100)
    assert [e.split(b"\n", 1)[0] for e in events] == [
        b"event: page-part",
        b"event: page-part",
        b"id: " + big.tag.encode(),
    ]
    assert events[0] == b'event: page-part\ndata: [{"id":"a","pad":"' + b"x" * 500 + b'"}]\n\n'
    assert events[1] == b'event: page-part\ndata: [{"id":"b"},{"id":"c"}]\n\n'
    assert events[2].endswith(b'data: {"trace_id":"t","steps":{"parts":2}}\n\n')  # no conversation: none
