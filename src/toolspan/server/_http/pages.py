"""The HTML pages of ``toolspan serve``: the trace page of one run, live, and the list of traces.

- ``/traces/{id}`` and ``/api/jobs/{id}/trace/page``: the trace page (``toolspan.page``) in live mode. It
  follows ``/api/traces/{id}/stream`` and re-fetches ``/api/traces/{id}/page`` (``to_pages(spans,
  live=True)``), so running tools appear and finish while you watch. A token given as ``?access_token=``
  is passed on to those two URLs (a browser's ``EventSource`` cannot send headers). A server with a token
  serves it with the buttons that decide waiting calls and cancel running ones (``toolspan.page``, step 4).
- ``/traces``: the newest traces (``/api/traces`` rows, same filters) as a table linking to their pages,
  each named by what the user asked (the root's input), with a search box (``q``), a state filter
  (``state``), a refresh button and auto-refresh (``refresh=<seconds>``, a meta refresh): a plain GET form,
  so the page runs no script. Every value is HTML-escaped; its Content-Security-Policy allows its one
  stylesheet (by hash), form submissions to itself and nothing else: no script, no other request.
- ``/`` leads to ``/traces``.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import html
import urllib.parse
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Final

from toolspan.bridge.model import Span
from toolspan.bridge.views import to_pages
from toolspan.page import LiveOptions, page_json, render_html

__all__ = [
    "LIST_STATES",
    "LIVE_TAIL_NOTE",
    "page_data",
    "said_after_first",
    "trace_list_html",
    "trace_page_html",
]

_STYLE: Final = (
    "body{font:14px system-ui,sans-serif;margin:1.5rem;color:#1f2328;background:#fff}"
    "h1{margin:0 0 .2rem}p.sub{margin:0 0 1rem;color:#59636e}"
    "form{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;margin:0 0 1rem}"
    "input[type=search]{flex:1 1 18rem;padding:.35rem .5rem;font:inherit}select,button{font:inherit;"
    "padding:.3rem .5rem}label{white-space:nowrap}"
    "table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.35rem .6rem;"
    "border-bottom:1px solid #d0d7de;vertical-align:top}th{font-weight:600}td.n{text-align:right}"
    "td{white-space:nowrap}td.run{white-space:normal;overflow-wrap:anywhere}"
    "td.run small{display:block;color:#59636e}"
    "a{color:#0969da}.FAILED{color:#cf222e}.SEALED{color:#9a6700}.RUNNING{color:#0969da}"
    ".DENIED{color:#8250df}"
    "@media (prefers-color-scheme:dark){body{background:#0d1117;color:#e6edf3}"
    "th,td{border-color:#30363d}a{color:#4493f8}p.sub,td.run small{color:#9198a1}.DENIED{color:#ab7df8}}"
)
_STYLE_HASH: Final = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()
LIST_CSP: Final = f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; base-uri 'none'; form-action 'self'"
# The states a trace can be listed in (``/api/traces?state=``), in the list page's filter.
LIST_STATES: Final = ("RUNNING", "COMPLETED", "FAILED", "DENIED", "SEALED")
# Auto-refresh periods the list page offers (seconds; ``?refresh=``).
REFRESH_S: Final = (5, 15, 60)
_SEPARATOR: Final = " \u00b7 "
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


def _token_query(token: str | None) -> str:
    return "" if not token else "?" + urllib.parse.urlencode({"access_token": token})


def page_data(spans: Sequence[Span]) -> str:
    """The live page's data: the page document(s) of ``spans`` as JSON text."""
    docs = to_pages(list(spans), live=True)
    return page_json(docs[0] if len(docs) == 1 else docs)


def trace_page_html(trace_id: str, spans: Sequence[Span], token: str | None, control: bool = False) -> str:
    """The live trace page of ``trace_id``; with ``control`` (the server has decider tokens), with the buttons
    that decide and cancel tool calls (``_http.control``), shown to a token that may decide."""
    docs = to_pages(list(spans), live=True)
    query = _token_query(token)
    live = LiveOptions(
        stream_url=f"/api/traces/{trace_id}/stream{query}",
        data_url=f"/api/traces/{trace_id}/page{query}",
        decisions_url="/api/control/decisions" if control else None,
        cancels_url="/api/control/cancels" if control else None,
        whoami_url="/api/whoami" if control else None,
    )
    return render_html(docs[0] if len(docs) == 1 else docs, live=live)


def _when(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _run_cell(row: Mapping[str, Any], link: str) -> str:
    """The run's name: what the user asked (its root's input), with the root span's name and the
    conversation under it; the root's name alone, or the trace id, when no input was recorded."""
    esc = html.escape
    root = row.get("root_name") or ""
    asked = row.get("input")
    title = asked or root or row["trace_id"]
    under = [part for part in (root if asked else "", row.get("conversation_id") or "") if part]
    small = f"<small>{esc(_SEPARATOR.join(under))}</small>" if under else ""
    return f'<td class=run><a href="{esc(link)}">{esc(title)}</a>{small}</td>'


def _filters(query: Mapping[str, str], token: str | None) -> str:
    """The search box, the state filter, auto-refresh and the refresh button: a plain GET form (the page
    runs no script)."""
    esc = html.escape
    q = query.get("q", "")
    state = query.get("state", "").upper()
    refresh = query.get("refresh", "")
    states = "".join(
        f'<option value="{s}"{" selected" if s == state else ""}>{s}</option>' for s in LIST_STATES
    )
    periods = "".join(
        f'<option value="{n}"{" selected" if str(n) == refresh else ""}>every {n} s</option>'
        for n in REFRESH_S
    )
    hidden = f'<input type=hidden name=access_token value="{esc(token)}">' if token else ""
    return (
        '<form method=get action="/traces" role=search>'
        f'<input type=search name=q value="{esc(q)}" aria-label="Search traces"'
        ' placeholder="Search: the request, agent, tool, service, conversation or trace id">'
        f'<label>State <select name=state><option value="">any</option>{states}</select></label>'
        f'<label>Auto-refresh <select name=refresh><option value="">off</option>{periods}</select></label>'
        f"{hidden}<button type=submit>Refresh</button></form>"
    )


def trace_list_html(
    page: Mapping[str, Any], token: str | None, query: Mapping[str, str] | None = None
) -> str:
    """The trace list page of one ``/api/traces`` page (``{"traces": [...], "next_cursor": ...}``) for the
    request's ``query`` (``q``, ``state``, ``refresh`` and the other listing filters)."""
    esc = html.escape
    query = dict(query or {})
    query.pop("access_token", None)
    rows = []
    for row in page["traces"]:
        duration = "" if row["duration_ms"] is None else f"{row['duration_ms']:,} ms"
        link = f"/traces/{urllib.parse.quote(row['trace_id'])}{_token_query(token)}"
        rows.append(
            "<tr>" + _run_cell(row, link) + f"<td>{esc(row['service'] or '')}</td>"
            f"<td>{esc(_when(row['start']))}</td>"
            f'<td class="n">{esc(duration)}</td>'
            f'<td class="n">{row["tool_calls"]}</td>'
            f'<td class="n">{row["errors"]}</td>'
            f'<td class="n">{row.get("denied", 0)}</td>'
            f'<td class="{esc(row["state"])}">{esc(row["state"])}</td>'
            "</tr>"
        )
    more = ""
    if page.get("next_cursor"):
        params = {**query, "cursor": page["next_cursor"], **({"access_token": token} if token else {})}
        more = f'<p><a href="/traces?{esc(urllib.parse.urlencode(params))}">Older traces</a></p>'
    filtered = any(query.get(k) for k in query if k != "refresh")
    if filtered:
        empty = "No trace matches these filters."
    else:
        empty = (
            "No traces yet. Point an OTLP exporter at this server (OTEL_EXPORTER_OTLP_ENDPOINT=this"
            " address, OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf) and refresh."
        )
    body = "\n".join(rows) or f'<tr><td colspan="8">{esc(empty)}</td></tr>'
    refresh = query.get("refresh", "")
    periods = {str(n) for n in REFRESH_S}
    meta_refresh = f'<meta http-equiv="refresh" content="{refresh}">' if refresh in periods else ""
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="Content-Security-Policy" content="{LIST_CSP}">'
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"{meta_refresh}<title>toolspan traces</title><style>{_STYLE}</style></head><body>"
        "<h1>Traces</h1><p class=sub>Newest first. Each run links to its live trace page;"
        " the same rows as JSON: <code>/api/traces</code>.</p>"
        + _filters(query, token)
        + "<table><thead><tr><th>run</th><th>service</th><th>start</th><th>duration</th>"
        "<th>tool calls</th><th>errors</th><th>denied</th><th>state</th></tr></thead>"
        f"<tbody>\n{body}\n</tbody></table>{more}</body></html>\n"
    )
