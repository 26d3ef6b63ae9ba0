"""The HTML pages of ``toolspan serve``: the trace page of one run, live, and the list of traces.

- ``/traces/{id}`` and ``/api/jobs/{id}/trace/page``: the trace page (``toolspan.page``) in live mode. It
  follows ``/api/traces/{id}/stream`` and re-fetches ``/api/traces/{id}/page`` (``to_pages(spans,
  live=True)``), so running tools appear and finish while you watch. A token given as ``?access_token=``
  is passed on to those two URLs (a browser's ``EventSource`` cannot send headers).
- ``/traces``: the newest traces (``/api/traces`` rows, same filters) as a table linking to their pages.
  Every value is HTML-escaped; its Content-Security-Policy allows its one stylesheet (by hash) and nothing
  else: no script, no request.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import html
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, Final

from toolspan.bridge.model import Span
from toolspan.bridge.views import to_pages
from toolspan.page import LiveOptions, page_json, render_html

__all__ = ["page_data", "trace_list_html", "trace_page_html"]

_STYLE: Final = (
    "body{font:14px system-ui,sans-serif;margin:1.5rem;color:#1f2328;background:#fff}"
    "table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.35rem .6rem;"
    "border-bottom:1px solid #d0d7de}th{font-weight:600}td.n{text-align:right}"
    "a{color:#0969da}.FAILED{color:#cf222e}.SEALED{color:#9a6700}.RUNNING{color:#0969da}"
    "@media (prefers-color-scheme:dark){body{background:#0d1117;color:#e6edf3}"
    "th,td{border-color:#30363d}a{color:#4493f8}}"
)
_STYLE_HASH: Final = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()
LIST_CSP: Final = f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; base-uri 'none'; form-action 'none'"


def _token_query(token: str | None) -> str:
    return "" if not token else "?" + urllib.parse.urlencode({"access_token": token})


def page_data(spans: Sequence[Span]) -> str:
    """The live page's data: the page document(s) of ``spans`` as JSON text."""
    docs = to_pages(list(spans), live=True)
    return page_json(docs[0] if len(docs) == 1 else docs)


def trace_page_html(trace_id: str, spans: Sequence[Span], token: str | None) -> str:
    """The live trace page of ``trace_id``."""
    docs = to_pages(list(spans), live=True)
    query = _token_query(token)
    live = LiveOptions(
        stream_url=f"/api/traces/{trace_id}/stream{query}", data_url=f"/api/traces/{trace_id}/page{query}"
    )
    return render_html(docs[0] if len(docs) == 1 else docs, live=live)


def _when(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def trace_list_html(page: Mapping[str, Any], token: str | None) -> str:
    """The trace list page of one ``/api/traces`` page (``{"traces": [...], "next_cursor": ...}``)."""
    esc = html.escape
    query = _token_query(token)
    rows = []
    for row in page["traces"]:
        duration = "" if row["duration_ms"] is None else f"{row['duration_ms']:,} ms"
        link = f"/traces/{urllib.parse.quote(row['trace_id'])}{query}"
        rows.append(
            "<tr>"
            f'<td><a href="{esc(link)}">{esc(row["root_name"] or row["trace_id"])}</a></td>'
            f"<td>{esc(row['service'] or '')}</td>"
            f"<td>{esc(_when(row['start']))}</td>"
            f'<td class="n">{esc(duration)}</td>'
            f'<td class="n">{row["tool_calls"]}</td>'
            f'<td class="n">{row["errors"]}</td>'
            f'<td class="{esc(row["state"])}">{esc(row["state"])}</td>'
            "</tr>"
        )
    more = ""
    if page.get("next_cursor"):
        params = {"cursor": page["next_cursor"], **({"access_token": token} if token else {})}
        more = f'<p><a href="/traces?{esc(urllib.parse.urlencode(params))}">Older traces</a></p>'
    body = "\n".join(rows) or '<tr><td colspan="7">No traces yet.</td></tr>'
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="Content-Security-Policy" content="{LIST_CSP}">'
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>toolspan traces</title><style>{_STYLE}</style></head><body>"
        "<h1>Traces</h1><table><thead><tr><th>run</th><th>service</th><th>start</th><th>duration</th>"
        f"<th>tool calls</th><th>errors</th><th>state</th></tr></thead><tbody>\n{body}\n</tbody></table>"
        f"{more}</body></html>\n"
    )
