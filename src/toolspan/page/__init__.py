"""The trace page: one self-contained HTML file showing page documents (``toolspan.bridge.views.to_pages``).

``render_html(data, live=None, title=None) -> str`` fills the page template with ``data`` (one page document
or a list of them: the page then shows a trace picker). The file needs nothing else: CSS and JavaScript are
inline (our own), the data is embedded as JSON in ``<script type="application/json" id="ts-data">`` with
``<``, ``>``, ``&``, U+2028, U+2029 and lone surrogates escaped, so no value can close the element; the script
writes data only through text nodes and DOM properties. A Content-Security-Policy ``<meta>`` allows only the
page's own script and style (by sha256 hash) and no request at all (``default-src 'none'``, ``connect-src
'none'``, ``form-action 'none'``, ``base-uri 'none'``; ``img-src data:`` for the inline icon).

Live mode, the contract for a server (``toolspan serve`` wires it): ``render_html(data,
live=LiveOptions(stream_url=..., data_url=...))`` sets ``connect-src 'self'`` and makes the page

1. open ``EventSource(stream_url)`` (same origin; with the tab's token as ``access_token``, since an
   ``EventSource`` sends no header). Each event refreshes the page, its data is ignored: unnamed events
   (``message``) and events named ``update``, ``span``, ``act``, ``observe``, ``progress``, ``tool:start``,
   ``tool:end``, ``tool:error`` or ``done`` (so a trace's act/observe or progress stream can drive the page
   as it is);
2. on each message, ``GET data_url`` (same origin, ``cache: no-store``, the tab's token in the
   ``Authorization`` header), which must answer ``application/json`` holding the same kind of value as
   ``data``: one page document or a list of them, built with ``to_pages(spans, live=True)`` so spans that
   have not ended show as RUNNING (or AWAITING_APPROVAL) instead of SEALED; ``page_json`` gives the exact
   text; a 401 turns the page into the token page until a token the server takes is given;
3. re-render with that data, keeping the selected step, the trace shown and the scroll positions. A page
   opened on no step selects the first call waiting for an approval, and names every waiting call above the
   timeline. ``fetch_first``: the page was served without its data and reads ``data_url`` first.
   ``list_url``: the list of runs the page belongs to; a bar across the top leads there and to the inbox,
   counting the calls ``waiting_url`` lists and saying whose token the tab holds (``whoami_url``). The
   page's script holds no URL of its own: it asks only those given here (``inbox_url``: where the bar's
   inbox link leads).
   With ``page_stream_url`` the page follows that stream instead of 1. and 2.: ``event: page`` (a whole
   page document) and ``event: delta`` (``toolspan.bridge.views.page_delta`` of the document sent before,
   schema ``page-delta``, applied to the shown trace), each with ``id:`` the tag of the document it gives;
   it opens it with ``?version=<tag>`` of the document it holds (``version``, the embedded document's; or,
   served without its data, the ``ETag`` of its one ``GET data_url``), and ``EventSource`` resumes with
   ``Last-Event-ID``. A delta that does not apply to what the page holds reopens the stream without a
   version (the whole document again).
4. with ``decisions_url``, ``cancels_url`` and ``whoami_url`` (``toolspan serve --decider NAME=TOKEN``): the
   page asks ``whoami_url`` what its token may do, and to a token that may decide (a decider token) the
   details of a tool call that waits for its approval show Allow, Deny and Edit (a JSON editor of the
   arguments, checked to be a JSON object before anything is sent) and a note, a running call shows Cancel
   (which asks to be confirmed), with the decider's name: each a same-origin ``POST`` of JSON with
   ``Authorization: Bearer <token>`` naming the exact call (``execution_id``, ``trace_id``) and, for a
   decision, the digest of the arguments shown (``shown``: the step's ``arguments_sha256``). The answer (or
   the refusal, with its reason) shows under the buttons until the call's new state arrives on the stream.

The token of a served page is the tab's own (``common.js``): taken from ``?access_token=`` or
``#access_token=`` (then removed from the address bar) or asked for, and kept in the tab's
``sessionStorage`` only, never in a cookie. Bursts of messages collapse into one fetch at a time. Between
updates, the bars of steps still running grow with the browser's clock (once a second; a clock more than an
hour off the trace's times is ignored). The page works from ``file://`` and from any path of the server; the
URLs may be relative to the page's URL.

``render_app("list" | "inbox")``: the other pages of ``toolspan serve`` (the trace list and the inbox of
calls waiting for a decision), holding no data: their scripts read the server's API with the tab's token.

The trace page's script is the files of ``trace/``, one job each, joined in the order ``TRACE_SCRIPTS``
declares (``trace_script()``); ``common.js`` is every served page's (the token, requests, the bar, ``el``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Final

from toolspan import semconv as sc
from toolspan._util.words import DECISIONS

__all__ = [
    "APPS",
    "TRACE_SCRIPTS",
    "WORDS",
    "LiveOptions",
    "content_security_policy",
    "embed_json",
    "page_json",
    "render_app",
    "render_html",
    "trace_script",
]

_ESCAPES: Final = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_UNSAFE: Final = re.compile("[<>&\u2028\u2029\ud800-\udfff]")
_LONE: Final = re.compile("[\ud800-\udfff]")
_ICON: Final = (
    "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E"
    "%3Crect x='1' y='3' width='9' height='3' rx='1' fill='%230969da'/%3E"
    "%3Crect x='5' y='7' width='10' height='3' rx='1' fill='%232da44e'/%3E"
    "%3Crect x='3' y='11' width='6' height='3' rx='1' fill='%23bf3989'/%3E%3C/svg%3E"
)


@dataclass(frozen=True, slots=True)
class LiveOptions:
    """Where a served page follows its trace: an SSE stream, and the URL returning fresh page JSON."""

    stream_url: str
    data_url: str
    # Where the page decides waiting calls and cancels running ones (``toolspan serve``): the page shows
    # Allow, Deny, Edit and Cancel to a decider's token (``whoami_url``). ``None``: no such buttons.
    decisions_url: str | None = None
    cancels_url: str | None = None
    # What the page's token may do (``GET /api/whoami``): the buttons show to a decider token only, and the
    # top bar says whose token the tab holds. ``None``: the page asks nothing (it reads, it decides nothing).
    whoami_url: str | None = None
    # Served without its data (asked for without the token): the page reads ``data_url`` first.
    fetch_first: bool = False
    # The list of runs the page belongs to (``toolspan serve``'s ``/traces``): a bar across the top leads
    # there and to the inbox. ``None``: no such bar.
    list_url: str | None = None
    # The calls waiting for a decision (``GET``, ``{"waiting": [...]}``): the top bar counts them.
    waiting_url: str | None = None
    # The inbox page the top bar leads to (beside ``list_url``).
    inbox_url: str | None = None
    # The trace's page stream (``toolspan serve``'s ``/api/traces/{id}/page/stream``: ``event: page``, the
    # whole document, a large one after its steps and conversation in parts, ``event: page-part``, then
    # ``event: delta``, what changed, schema ``page-delta``; ``id:`` the tag of the document the client
    # then holds, resumed from with ``?version=``). Given, the page follows it instead
    # of ``stream_url`` and reads ``data_url`` only when served without its data. ``version``: the tag of
    # the document embedded (``data_url``'s ``ETag``).
    page_stream_url: str | None = None
    version: str | None = None


def _escape(match: re.Match[str]) -> str:
    ch = match.group(0)
    return _ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


def page_json(data: Sequence[Mapping[str, Any]] | Mapping[str, Any]) -> str:
    """Compact JSON text of page documents: what the page embeds and what a live ``data_url`` returns."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=repr)


def embed_json(data: Any) -> str:
    """JSON text safe inside ``<script type="application/json">``: it cannot close the element."""
    return _UNSAFE.sub(_escape, page_json(data))


@cache
def _asset(name: str) -> str:
    return resources.files("toolspan.page").joinpath(*name.split("/")).read_text("utf-8")


# The trace page's script: the files of ``trace/``, one job each, in this order (declared here only), in one
# function, so their shared names stay the page's own. ``tests/page/js/tsconfig.json`` checks their JSDoc
# types, ``node --test`` tests their pure helpers (format.js, model.js).
TRACE_SCRIPTS: Final = (
    "format.js",  # constants; how numbers, durations and labels are written
    "model.js",  # the page documents' types, the page's state, its pure functions (shape, tree, filter)
    "dom.js",  # the document, the config, el() (common.js's), $()
    "vlist.js",  # the virtual list the timeline and the tree are
    "filter.js",  # the state chips, the search, the tool and audit filters
    "timeline.js",  # the timeline's column table, rows, bars, axis, clock, pane heights
    "tree.js",  # the execution tree
    "select.js",  # the selection, the deep link, keyboard and mouse
    "audit.js",  # the policy audit panel
    "detail.js",  # the details of the selected step
    "controls.js",  # Allow, Deny, Edit and Cancel through the server
    "conversation.js",  # the conversation panel
    "live.js",  # following the trace's event stream
    "main.js",  # setData, showTrace, the header, the start
)


@cache
def trace_script() -> str:
    """The trace page's one script: ``TRACE_SCRIPTS`` concatenated, in one strict function."""
    parts = [f"// ---- trace/{name} ----\n" + _asset(f"trace/{name}") for name in TRACE_SCRIPTS]
    head = (
        '"use strict";\n'
        "// toolspan trace page. Data is only ever written as text nodes and DOM properties, never as HTML.\n"
        "(function () {\n"
    )
    return head + "\n".join(parts) + "})();\n"


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def content_security_policy(script: str | Sequence[str], style: str, live: bool) -> str:
    """The page's policy: only these scripts and this style, no network (live: same-origin fetch and SSE)."""
    scripts = [script] if isinstance(script, str) else list(script)
    return "; ".join(
        (
            "default-src 'none'",
            "script-src " + " ".join(_sha256(s) for s in scripts),
            f"style-src {_sha256(style)}",
            "img-src data:",
            "connect-src 'self'" if live else "connect-src 'none'",
            "form-action 'none'",
            "base-uri 'none'",
        )
    )


def _attr(text: str) -> str:
    """``text`` for an attribute or element of the page: escaped, and a lone surrogate (text no UTF-8 can
    carry, from a span's name) as U+FFFD, so the page can always be written."""
    text = _LONE.sub("\ufffd", text)
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


# The words the pages show and send, from their one home (``semconv``, ``toolspan._util.words``): every page
# reads them from its config (``words``), none keeps a list of its own.
WORDS: Final = {
    "tool_states": list(sc.TOOL_STATES),
    "trace_states": list(sc.TRACE_STATES),
    "live_states": list(sc.LIVE_TRACE_STATES),
    "decisions": list(DECISIONS),
}


def render_html(
    data: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    live: LiveOptions | None = None,
    title: str | None = None,
) -> str:
    """One self-contained HTML page showing ``data`` (a page document or a list of them)."""
    common = _asset("common.js")
    script = trace_script()
    style = _asset("theme.css") + _asset("page.css")
    config: dict[str, Any] = {
        "live": None
        if live is None
        else {"stream_url": live.stream_url, "data_url": live.data_url, "fetch_first": live.fetch_first},
        "words": WORDS,
    }
    if live is not None and live.list_url:
        config["live"]["list_url"] = live.list_url
    if live is not None and live.page_stream_url:
        config["live"]["page_stream_url"] = live.page_stream_url
        if live.version:
            config["live"]["version"] = live.version
    urls = (
        _urls(whoami=live.whoami_url, waiting=live.waiting_url, list=live.list_url, inbox=live.inbox_url)
        if live is not None
        else {}
    )
    if urls:
        config["urls"] = urls
    if live is not None and live.decisions_url and live.cancels_url and live.whoami_url:
        config["control"] = {
            "decisions_url": live.decisions_url,
            "cancels_url": live.cancels_url,
            "whoami_url": live.whoami_url,
        }
    if title is None:
        first = data if isinstance(data, Mapping) else (data[0] if data else {})
        title = str(first.get("title") or first.get("trace_id") or "trace")
    return _asset("template.html").format(
        csp=_attr(content_security_policy([common, script], style, live is not None)),
        icon=_ICON,
        # The bar leading to the server's other pages.
        top=_asset("top.html").format(icon=_ICON) if live is not None and live.list_url else "",
        title=_attr(title[:200]) + " \u2014 toolspan",
        style=style,
        common=common,
        script=script,
        config=embed_json(config),
        data=embed_json(data),
    )


# The pages of ``toolspan serve`` besides the trace page: their script, and their title.
APPS: Final = {"list": ("list.js", "Runs"), "inbox": ("inbox.js", "Inbox")}


def _urls(**urls: str | None) -> dict[str, str]:
    """The URLs common.js asks or links to (``whoami``, ``waiting``, the top bar's ``list`` and ``inbox``),
    and the list's and the inbox's (``runs``, ``stream``, ``trace``, ``decisions``): those given."""
    return {name: url for name, url in urls.items() if url}


def render_app(app: str, urls: Mapping[str, str] | None = None) -> str:
    """The served page ``app`` (``"list"``: the trace list; ``"inbox"``: the calls waiting for a decision):
    one self-contained HTML file holding no data (the script reads it from the server's API with the tab's
    token), so it is served to anyone, and asks for the token when the API wants one. ``urls``: every URL
    its script asks or links to (it holds none): where the top bar asks what the tab's token may do
    (``whoami``), counts the waiting calls (``waiting``) and leads (``list``, ``inbox``); the list of runs
    (``runs``, JSON) and the all-traces stream (``stream``); a run's page (``trace``, ``{trace_id}`` in it
    replaced); where a decision is sent (``decisions``)."""
    name, title = APPS[app]
    common = _asset("common.js")
    script = _asset(name)
    style = _asset("theme.css") + _asset("app.css")
    policy = content_security_policy([common, script], style, live=True)
    return _asset("app.html").format(
        csp=_attr(policy),
        icon=_ICON,
        top=_asset("top.html").format(icon=_ICON),
        title=f"{title} \u2014 toolspan",
        app=app,
        style=style,
        common=common,
        script=script,
        config=embed_json({"app": app, "words": WORDS, "urls": _urls(**(urls or {}))}),
    )
