"""``GET /api/traces`` on a server given a trace backend (``--jaeger``, ``--tempo``): the runs held here and
the backend's recent runs in one list, newest first, paged with one cursor.

Jaeger is searched as ``toolspan find`` searches it (``/api/services``, then ``/api/traces?service=...``
for each, or for the ``service`` asked) over the page's range: the last hour unless ``from_ms`` says
otherwise, up to ``to_ms`` and the cursor. Its answer holds every span of each trace found, so each run is
summarised as the store summarises a trace held here (state, spans, tool calls, errors, denied, cancelled,
waiting), and named as ``toolspan find`` names it (its root span's name and service); a run also held here
is listed once, as held here. The other filters apply to Jaeger's runs too (``q``: a part of the trace id,
a name, the service, the conversation id, a tool name or what was asked). A page asks Jaeger for
``limit + 1`` runs of each service: where it holds more, the page ends at the last run read, and
``next_cursor`` goes on from there (which runs Jaeger answers when a range holds more is its choice).

Tempo's search answers no span of a run (no state, no tool calls): the list holds the runs held here, and
``note`` says so in one line; so does a Jaeger that knows no service yet. A backend that fails is a
``RemoteError`` naming it (the route answers 502 with that one line).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.backends import BackendError, Jaeger, RunQuery, run_of
from toolspan.bridge import coalesce
from toolspan.bridge.model import Span
from toolspan.server._http import trace_list
from toolspan.server._rows.spans import Row, row_of
from toolspan.server._store import remote
from toolspan.server._store.api import StoreApi
from toolspan.server._store.listing import LISTED_TOOL_STATES
from toolspan.server._store.summaries import summary_rows

__all__ = ["LOOKBACK_NS", "list_traces"]

# How far back a page of Jaeger's runs reaches when ``from_ms`` does not say.
LOOKBACK_NS: Final = 3600 * 1_000_000_000

# Why Tempo's runs are not listed, in one line.
_TEMPO_NOTE: Final = (
    "the runs in Tempo are not listed here (its search gives no run's spans: no state, no tool calls);"
    " open one at /traces/TRACE_ID, or list them with toolspan find --tempo {url}"
)

Entry = tuple[trace_list.Key, dict[str, Any]]


def list_traces(
    store: StoreApi,
    params: dict[str, str],
    idle_timeout_s: float,
    tempo_url: str | None,
    jaeger_url: str | None,
    *,
    timeout_s: float,
) -> dict[str, Any]:
    """One page: ``{"traces": [...], "next_cursor": ...}``, and ``note`` (one line) when the backend's runs
    are not listed; ``QueryError`` on a bad parameter, ``RemoteError`` when Jaeger failed (each of its
    answers comes whole within ``timeout_s``)."""
    local, local_more = trace_list.list_page(store, params, idle_timeout_s)
    limit = trace_list.page_limit(params)
    if jaeger_url is None:
        page = _merged(local, local_more, [], None, limit)
        return {**page, "note": _TEMPO_NOTE.format(url=tempo_url)}
    try:
        jaeger = Jaeger(jaeger_url, timeout_s=timeout_s)
        found, boundary, note = _jaeger_page(jaeger, store, params, idle_timeout_s, limit)
    except (BackendError, ValueError) as e:
        raise remote.RemoteError(f"{Jaeger.kind}: {e}") from None
    page = _merged(local, local_more, found, boundary, limit)
    return page if note is None else {**page, "note": note}


def _merged(
    local: list[Entry], local_more: bool, found: list[Entry], boundary: trace_list.Key | None, limit: int
) -> dict[str, Any]:
    """The page of both lists: the rows down to where either one's next page would begin (``cut``: below
    it, a list may hold rows not read yet), at most ``limit`` of them."""
    cuts = [key for key in (local[-1][0] if local_more and local else None, boundary) if key is not None]
    cut = max(cuts) if cuts else None
    rows = sorted(local + found, key=lambda entry: entry[0], reverse=True)
    if cut is not None:
        rows = [entry for entry in rows if entry[0] >= cut]
    next_key = cut
    if len(rows) > limit:
        rows = rows[:limit]
        next_key = rows[-1][0]
    return {
        "traces": [row for _, row in rows],
        "next_cursor": None if next_key is None else trace_list.cursor_of(next_key),
    }


def _jaeger_page(
    jaeger: Jaeger, store: StoreApi, params: dict[str, str], idle_timeout_s: float, limit: int
) -> tuple[list[Entry], trace_list.Key | None, str | None]:
    """Jaeger's runs of the page (those held here left out), the key below which it may hold more, and
    the one line saying why there are none (a Jaeger with no service)."""
    now = time.time_ns()
    start_from, start_to = trace_list.start_bounds(params)
    start = now - LOOKBACK_NS if start_from is None else start_from
    end = now if start_to is None else start_to
    cursor = trace_list.parse_cursor(params["cursor"]) if params.get("cursor") else None
    if cursor is not None:
        end = min(end, cursor[0] + 1)
    if start >= end:
        return [], None, None
    service = params.get("service") or None
    services = [service] if service else jaeger.services()
    if not services:
        return [], None, f"Jaeger at {jaeger.url} knows no service yet: the runs it receives are listed here"
    ask = RunQuery(
        start_ns=start, end_ns=end, service=service, tool=params.get("tool") or None, limit=limit + 1
    )
    idle_cut = now - int(idle_timeout_s * 1e9)
    runs: list[tuple[Entry, list[Row]]] = []
    for trace_id, spans in jaeger.search(ask, services).items():
        entry, rows = _entry(trace_id, spans, idle_cut)
        key = entry[0]
        if start <= key[0] < end and (cursor is None or key < cursor):
            runs.append((entry, rows))
    runs.sort(key=lambda run: run[0][0], reverse=True)
    boundary = runs[limit - 1][0][0] if len(runs) > limit else None
    shown = [
        entry
        for entry, rows in runs[:limit]
        if _matches(entry[1], rows, params) and store.trace_row(entry[1]["trace_id"]) is None
    ]
    return shown, boundary, None


def _entry(trace_id: str, records: Sequence[Span], idle_cut: int) -> tuple[Entry, list[Row]]:
    """The list's row of a trace read from the backend: summarised as the store summarises the same spans,
    named and attributed to a service as ``toolspan find`` does (its root span's)."""
    spans = coalesce(records)  # the records of one span (pending, then ended) as the store merges them
    rows = [row_of(span, b"") for span in spans]
    last_seen = max(max(s.start_ns, s.end_ns or 0) for s in spans)
    (summarised,), _ = summary_rows(rows, (), {}, lambda _: last_seen)
    calls: dict[str, int] = {}
    for row in rows:
        state = sc.STATE_AWAITING_APPROVAL if row.waiting else row.tool_state
        if row.is_tool and state in LISTED_TOOL_STATES:
            calls[str(state)] = calls.get(str(state), 0) + 1
    run = run_of(trace_id, records)
    listed = {**trace_list.summary(summarised, idle_cut, calls, spans), "name": run.name}
    listed["service"] = run.service or None
    return ((summarised.start_ns, trace_id), listed), rows


def _matches(row: dict[str, Any], rows: Sequence[Row], params: dict[str, str]) -> bool:
    """Whether a backend's run passes the listing's filters (``service``: Jaeger searched that one)."""
    tools = {r.tool_name for r in rows if r.is_tool and r.tool_name is not None}
    if params.get("tool") and params["tool"] not in tools:
        return False
    if params.get("conversation_id") and row["conversation_id"] != params["conversation_id"]:
        return False
    if params.get("state") and row["state"] != params["state"].upper():
        return False
    needle = params.get("q")
    if needle:
        fields = (
            row["trace_id"],
            row["name"],
            row["root_name"],
            row["service"],
            row["conversation_id"],
            *tools,
        )
        texts = [trace_list.ascii_lower(f) for f in fields if f]
        if row["input"] and len(needle.encode("utf-8", "surrogatepass")) >= 3:
            texts.append(trace_list.ascii_lower(row["input"]))
        return any(trace_list.ascii_lower(needle) in text for text in texts)
    return True
