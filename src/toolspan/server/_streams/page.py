"""The live trace page's stream (``/api/traces/{id}/page/stream``): the page document, then what changes.

Each event names, as its ``id``, the **tag** of the document the client holds once it has applied it: the
first 32 hex digits of the SHA-256 of the document's JSON text (the bytes ``/api/traces/{id}/page`` answers,
which gives the same tag as its ``ETag``), so it means the same on every replica that reads the same spans.

    id: <tag>
    event: page        the whole document (schema ``page``): the first event, and whenever the client's
                       document is not one this server kept
    event: delta       what changed since the previous event's document (schema ``page-delta``,
                       ``toolspan.bridge.views.page_delta``)

A whole document of more than ``PART_BYTES`` of JSON text (a run of some thousands of steps) is sent in
parts, so that no one task of the page parses it all (issue 36: 100,000 calls are 54 MB):

    event: page-part   no id: a JSON array of the next items of the document's ``steps``, then of its
                       ``conversation`` (each part about ``PART_BYTES`` of JSON text at most)
    id: <tag>
    event: page        the rest of the document, in which ``steps`` and ``conversation`` are each
                       ``{"parts": N}``: the next N parts' items, concatenated, in order

The parts carry no ``id``: a client that hangs up among them resumes from the document it held before, and
drops the parts it had (each connection sends a document's parts again from its first). Put together, the
document is exactly the one ``/api/traces/{id}/page`` answers, with the tag of its JSON text.

A client resumes with ``Last-Event-ID`` (or ``?version=<tag>``, the tag of a document it read): when that
document is the current one nothing is sent until the trace changes; when the server still keeps it the
stream starts with the delta from it; else with the whole document. The stream wakes on each commit of the
trace (on this replica, or another's through the store's change feed) and sends one event for all that was
committed since it last read: a burst coalesces. Documents are built once per version of the trace however
many pages follow it (``PageDocs``: the current document per trace, a few before it, the deltas between
them, the parts of the last documents sent in parts).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from starlette.concurrency import run_in_threadpool

from toolspan._util.ids import hex_id
from toolspan.bridge.views import page_delta
from toolspan.page import page_json
from toolspan.server._streams.sse import CONNECTED, HEARTBEAT, within
from toolspan.server._streams.wakeups import Notifier

__all__ = [
    "PART_BYTES",
    "TAG_DIGITS",
    "PageDocs",
    "PageVersion",
    "page_chunks",
    "page_tag",
    "valid_tag",
    "whole_events",
]

# A tag is as many hex digits as a trace id (a SHA-256 cut short), spelled as ids are.
TAG_DIGITS: Final = 32
_REMOTE_POLL_S: Final = 1.0
# A whole document of more JSON text than this goes in parts of at most about this much (one item more than
# this is a part of its own): the page parses each in a task of its own, a few milliseconds each.
PART_BYTES: Final = 1 << 20
# The members of a page document sent in parts, in this order: its long lists.
_PARTED: Final = ("steps", "conversation")


def page_tag(body: bytes) -> str:
    """The tag of a page document's JSON text."""
    return hashlib.sha256(body).hexdigest()[:TAG_DIGITS]


def valid_tag(text: str) -> bool:
    """Whether ``text`` can be a tag (32 lowercase hex digits)."""
    return hex_id(text, TAG_DIGITS) is not None


@dataclass(frozen=True, slots=True)
class PageVersion:
    """One document of a trace's page: its tag, the document, its JSON text."""

    tag: str
    doc: dict[str, Any]
    body: bytes


def version_of(doc: dict[str, Any], body: bytes | None = None) -> PageVersion:
    """``doc`` with its JSON text and tag (``body``: its JSON text, when already made)."""
    text = page_json(doc).encode("utf-8") if body is None else body
    return PageVersion(page_tag(text), doc, text)


class PageDocs:
    """The page documents of the traces being followed, built once per version of a trace (the streams of
    one trace that wake together wait for the one build, which goes on when one of them hangs up), the last
    ``per_trace`` of each trace kept by tag to resume from, at most ``max_bytes`` of JSON text in all, the
    least recently built first out (a stream holds its own last document whatever is kept), and the deltas
    between them (at most ``deltas``), and the parts of the last ``wholes`` documents sent in parts
    (``whole_events``, ``part_bytes``). Event loop only."""

    def __init__(
        self,
        per_trace: int = 3,
        max_bytes: int = 32 << 20,
        deltas: int = 64,
        wholes: int = 2,
        part_bytes: int = PART_BYTES,
    ) -> None:
        self._per_trace = per_trace
        self._max_bytes = max_bytes
        self._max_deltas = deltas
        self._size = 0
        self._kept: OrderedDict[str, OrderedDict[str, PageVersion]] = OrderedDict()
        self._current: dict[str, tuple[Hashable, PageVersion]] = {}
        self._building: dict[tuple[str, Hashable], asyncio.Future[PageVersion | None]] = {}
        self._deltas: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._max_wholes = wholes
        self._wholes: OrderedDict[str, list[bytes]] = OrderedDict()
        self.part_bytes = part_bytes
        self.built = 0  # documents built (a test counts them)

    def by_tag(self, trace_id: str, tag: str) -> PageVersion | None:
        """The document of ``trace_id`` with this tag, if kept."""
        return self._kept.get(trace_id, OrderedDict()).get(tag)

    def _keep(self, trace_id: str, page: PageVersion) -> None:
        kept = self._kept.pop(trace_id, OrderedDict())
        old = kept.pop(page.tag, None)
        self._size -= 0 if old is None else len(old.body)
        kept[page.tag] = page
        self._size += len(page.body)
        while len(kept) > self._per_trace:
            self._size -= len(kept.popitem(last=False)[1].body)
        self._kept[trace_id] = kept
        while self._size > self._max_bytes and self._kept:
            oldest, pages = next(iter(self._kept.items()))
            self._size -= len(pages.popitem(last=False)[1].body)
            if not pages:
                del self._kept[oldest]
                self._current.pop(oldest, None)

    async def _build(
        self, trace_id: str, version: Hashable, build: Callable[[], Awaitable[PageVersion | None]]
    ) -> PageVersion | None:
        try:
            page = await build()
            if page is not None:
                self.built += 1
                self._current[trace_id] = (version, page)
                self._keep(trace_id, page)
            return page
        finally:
            self._building.pop((trace_id, version), None)

    async def current(
        self, trace_id: str, version: Hashable | None, build: Callable[[], Awaitable[PageVersion | None]]
    ) -> PageVersion | None:
        """The document of ``trace_id`` at ``version`` (``None``: unversioned, always built), built by
        ``build`` once for every stream asking for the same version."""
        if version is None:
            return await build()
        held = self._current.get(trace_id)
        if held is not None and held[0] == version:
            return held[1]
        key = (trace_id, version)
        task = self._building.get(key)
        if task is None:
            task = asyncio.ensure_future(self._build(trace_id, version, build))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved: no log if unawaited
            self._building[key] = task
        return await asyncio.shield(task)

    async def delta(self, trace_id: str, old: PageVersion, new: PageVersion) -> bytes:
        """The JSON text of ``page_delta(old, new)``, made once."""
        key = (old.tag, new.tag)
        made = self._deltas.get(key)
        if made is None:
            made = await run_in_threadpool(lambda: page_json(page_delta(old.doc, new.doc)).encode("utf-8"))
            self._deltas[key] = made
            while len(self._deltas) > self._max_deltas:
                self._deltas.popitem(last=False)
        self._deltas.move_to_end(key)
        return made

    async def whole(self, page: PageVersion) -> list[bytes]:
        """The events that give a client ``page`` whole (``whole_events``), a document sent in parts made
        once."""
        if len(page.body) <= self.part_bytes:
            return [_event("page", page.tag, page.body)]
        made = self._wholes.get(page.tag)
        if made is None:
            made = await run_in_threadpool(whole_events, page, self.part_bytes)
            self._wholes[page.tag] = made
            while len(self._wholes) > self._max_wholes:
                self._wholes.popitem(last=False)
        self._wholes.move_to_end(page.tag)
        return made


def _event(kind: str, tag: str, body: bytes) -> bytes:
    return b"id: %s\nevent: %s\ndata: %s\n\n" % (tag.encode(), kind.encode(), body)


def _parts(items: list[Any], part_bytes: int) -> Iterator[bytes]:
    """``items`` as JSON arrays of consecutive items, each of at most about ``part_bytes`` of JSON text."""
    part: list[bytes] = []
    size = 0
    for item in items:
        text = page_json(item).encode("utf-8")
        if part and size + len(text) > part_bytes:
            yield b"[%s]" % b",".join(part)
            part, size = [], 0
        part.append(text)
        size += len(text) + 1
    if part:
        yield b"[%s]" % b",".join(part)


def whole_events(page: PageVersion, part_bytes: int = PART_BYTES) -> list[bytes]:
    """The events that give a client ``page`` whole: ``event: page``, or for a document of more than
    ``part_bytes`` of JSON text, its long lists in parts (``event: page-part``) then the rest of it."""
    if len(page.body) <= part_bytes or not isinstance(page.doc, dict):
        return [_event("page", page.tag, page.body)]
    events: list[bytes] = []
    rest = dict(page.doc)
    for key in _PARTED:
        items = rest.get(key)
        if isinstance(items, list):
            parts = [b"event: page-part\ndata: %s\n\n" % part for part in _parts(items, part_bytes)]
            events += parts
            rest[key] = {"parts": len(parts)}
    events.append(_event("page", page.tag, page_json(rest).encode("utf-8")))
    return events


# What a page stream reads when it wakes: the trace's document now (``None``: not held yet), and whether
# it came from this replica's store (else it is polled: the store's commits say nothing of it).
Current = Callable[[], Awaitable[tuple[PageVersion | None, bool]]]


async def page_chunks(
    docs: PageDocs,
    current: Current,
    notifier: Notifier,
    trace_id: str,
    since: str | None,
    *,
    heartbeat_s: float,
) -> AsyncIterator[bytes]:
    """The SSE chunks of a trace's page stream for a client holding the document tagged ``since`` (``None``:
    none)."""
    yield CONNECTED
    held = docs.by_tag(trace_id, since) if since is not None else None
    while True:
        waiter = notifier.waiter(traces=(trace_id,))
        page, local = await current()
        if held is None and page is not None and page.tag == since:
            held = page  # the client holds the current document (read just before, or embedded in the page)
        if page is not None and (held is None or page.tag != held.tag):
            if held is None:
                for event in await docs.whole(page):
                    yield event
            else:
                yield _event("delta", page.tag, await docs.delta(trace_id, held, page))
            held = page
        if local:
            if not await within(waiter.wait(), heartbeat_s):
                yield HEARTBEAT
        else:
            await asyncio.sleep(min(heartbeat_s, _REMOTE_POLL_S))
            yield HEARTBEAT
