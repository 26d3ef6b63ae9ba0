"""The live trace page's stream (``/api/traces/{id}/page/stream``): the page document, then what changes.

Each event names, as its ``id``, the **tag** of the document the client holds once it has applied it: the
first 32 hex digits of the SHA-256 of the document's JSON text (the bytes ``/api/traces/{id}/page`` answers,
which gives the same tag as its ``ETag``), so it means the same on every replica that reads the same spans.

    id: <tag>
    event: page        the whole document (schema ``page``): the first event, and whenever the client's
                       document is not one this server kept
    event: delta       what changed since the previous event's document (schema ``page-delta``,
                       ``toolspan.bridge.views.page_delta``)

A client resumes with ``Last-Event-ID`` (or ``?version=<tag>``, the tag of a document it read): when that
document is the current one nothing is sent until the trace changes; when the server still keeps it the
stream starts with the delta from it; else with the whole document. The stream wakes on each commit of the
trace (on this replica, or another's through the store's change feed) and sends one event for all that was
committed since it last read: a burst coalesces. Documents are built once per version of the trace however
many pages follow it (``PageDocs``: the current document per trace, a few before it, the deltas between
them).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any, Final

from starlette.concurrency import run_in_threadpool

from toolspan._util.ids import hex_id
from toolspan.bridge.views import page_delta
from toolspan.page import page_json
from toolspan.server._streams.sse import CONNECTED, HEARTBEAT, within
from toolspan.server._streams.wakeups import Notifier

__all__ = ["TAG_DIGITS", "PageDocs", "PageVersion", "page_chunks", "page_tag", "valid_tag"]

# A tag is as many hex digits as a trace id (a SHA-256 cut short), spelled as ids are.
TAG_DIGITS: Final = 32
_REMOTE_POLL_S: Final = 1.0


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
    between them (at most ``deltas``). Event loop only."""

    def __init__(self, per_trace: int = 3, max_bytes: int = 32 << 20, deltas: int = 64) -> None:
        self._per_trace = per_trace
        self._max_bytes = max_bytes
        self._max_deltas = deltas
        self._size = 0
        self._kept: OrderedDict[str, OrderedDict[str, PageVersion]] = OrderedDict()
        self._current: dict[str, tuple[Hashable, PageVersion]] = {}
        self._building: dict[tuple[str, Hashable], asyncio.Future[PageVersion | None]] = {}
        self._deltas: OrderedDict[tuple[str, str], bytes] = OrderedDict()
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


def _event(kind: str, tag: str, body: bytes) -> bytes:
    return b"id: %s\nevent: %s\ndata: %s\n\n" % (tag.encode(), kind.encode(), body)


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
                yield _event("page", page.tag, page.body)
            else:
                yield _event("delta", page.tag, await docs.delta(trace_id, held, page))
            held = page
        if local:
            if not await within(waiter.wait(), heartbeat_s):
                yield HEARTBEAT
        else:
            await asyncio.sleep(min(heartbeat_s, _REMOTE_POLL_S))
            yield HEARTBEAT
