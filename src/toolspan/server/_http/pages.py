"""The HTML pages of ``toolspan serve``: the list of runs, the inbox of calls waiting for a decision, and the
live trace page of one run (``toolspan.page``).

- ``/traces``: every run, newest first, with a search, a state filter, duration bars and counts, kept live
  by the all-traces stream; ``/inbox``: every tool call waiting for a decision, with Allow, Deny and Edit.
  Both pages hold no data: their scripts read ``/api/traces`` and ``/api/control/waiting`` with the tab's
  token, so they are served to anyone and ask for the token when the server wants one (kept in the tab
  only, never in a cookie or a URL).
- ``/traces/{id}`` and ``/api/jobs/{id}/trace/page``: the trace page in live mode. It follows
  ``/api/traces/{id}/stream`` and re-fetches ``/api/traces/{id}/page`` (``to_pages(spans, live=True)``), so
  running tools appear and finish while you watch; Allow, Deny, Edit and Cancel show to a decider's token.
  Asked for without the token (a browser opening the address the banner printed), it is served without its
  data, and asks for the token.
- ``/`` leads to ``/traces``.

Every page's Content-Security-Policy allows its own scripts and style (by hash) and requests to this
server only; values are written as text, never as HTML.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Final

from toolspan.bridge.model import Span
from toolspan.bridge.views import to_pages
from toolspan.page import LiveOptions, page_json, render_app, render_html

__all__ = [
    "LIVE_TAIL_NOTE",
    "PAGE_PATHS",
    "inbox_html",
    "page_data",
    "said_after_first",
    "trace_list_html",
    "trace_page_html",
]

# The paths of the pages (the trace page's ids excepted): served to a browser without the token, as a page
# holding no data that asks for it.
PAGE_PATHS: Final = frozenset({"/", "/traces", "/inbox"})

# The first comment of the all-traces stream when it starts at the live tail (``curl -N`` shows it).
LIVE_TAIL_NOTE: Final = b": live tail: events from now on; ?from=start for every event kept\n\n"


async def said_after_first(chunks: AsyncIterator[bytes], note: bytes) -> AsyncIterator[bytes]:
    """``chunks`` with ``note`` (an SSE comment) after the first chunk (the stream's ``connected``)."""
    first = True
    try:
        async for chunk in chunks:
            yield chunk
            if first:
                first = False
                yield note
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


def page_data(spans: Sequence[Span]) -> str:
    """The live page's data: the page document(s) of ``spans`` as JSON text."""
    docs = to_pages(list(spans), live=True)
    return page_json(docs[0] if len(docs) == 1 else docs)


def trace_page_html(trace_id: str, spans: Sequence[Span] | None, control: bool = False) -> str:
    """The live trace page of ``trace_id``; ``spans=None``: served without its data (the request had no
    token the server holds), the page reads it with the tab's token. With ``control`` (the server has
    decider tokens), with the buttons that decide and cancel tool calls (``_http.control``), shown to a
    token that may decide."""
    docs = to_pages(list(spans), live=True) if spans is not None else []
    live = LiveOptions(
        stream_url=f"/api/traces/{trace_id}/stream",
        data_url=f"/api/traces/{trace_id}/page",
        decisions_url="/api/control/decisions" if control else None,
        cancels_url="/api/control/cancels" if control else None,
        whoami_url="/api/whoami" if control else None,
        fetch_first=spans is None,
        list_url="/traces",
    )
    title = None if spans is not None else "trace " + trace_id
    return render_html(docs[0] if len(docs) == 1 else docs, live=live, title=title)


def trace_list_html() -> str:
    """The list of runs (its script reads ``/api/traces``)."""
    return render_app("list")


def inbox_html() -> str:
    """The inbox of calls waiting for a decision (its script reads ``/api/control/waiting``)."""
    return render_app("inbox")
