"""The one registry of views: every shape a trace can be converted to, listed once.

Each ``View`` says its ``name`` (``toolspan convert --to NAME``, ``GET /api/traces/{id}/NAME``), a one-line
``title``, its ``build`` function (spans -> the items of a JSON Lines output, or one document), whether it
is ``lines`` or one document, and the JSON Schema of one item or of the document (``load_schema``).
``per_trace`` views are served for one trace by ``toolspan serve``; ``media`` says what the output is
(``json``, or ``html`` for the trace page, which the CLI writes and the server serves as a page). The CLI's
choices and help, the server's view routes and its OpenAPI document all read this list, in this order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from toolspan.bridge.model import Span

__all__ = ["VIEWS", "View"]


@dataclass(frozen=True, slots=True)
class View:
    name: str
    title: str
    build: Callable[[Sequence[Span]], Any]
    lines: bool  # JSON Lines of items; else one document
    schema: str | None  # schema of one item (lines) or of the document
    per_trace: bool = True  # served at /api/traces/{id}/{name}
    media: str = "json"  # "json", or "html" (the trace page)


def _events(spans: Sequence[Span]) -> Any:
    from toolspan.bridge.views._events import to_events

    return to_events(spans)


def _timeline(spans: Sequence[Span]) -> Any:
    from toolspan.bridge.views._timeline import to_timelines

    return to_timelines(list(spans))


def _tree(spans: Sequence[Span]) -> Any:
    from toolspan.bridge.views._tree import to_trees

    trees = to_trees(list(spans))
    return trees[0] if len(trees) == 1 else trees


def _plans(spans: Sequence[Span]) -> Any:
    from toolspan.bridge.views._plans import to_plans

    return to_plans(list(spans))


def _progress(spans: Sequence[Span]) -> Any:
    from toolspan.bridge.views._progress import to_progress

    return to_progress(list(spans))


def _ag_ui(spans: Sequence[Span]) -> Any:
    from toolspan.bridge.views._agui import to_ag_ui

    return to_ag_ui(list(spans))


def _ai_sdk(spans: Sequence[Span]) -> Any:
    from toolspan.bridge.views._aisdk import to_ai_sdk

    return to_ai_sdk(list(spans))


def _pages(spans: Sequence[Span]) -> Any:
    from toolspan.bridge.views._page import to_pages

    return to_pages(list(spans))


_ALL: Final = (
    View("events", "act/observe event stream", _events, lines=True, schema="events"),
    View("timeline", "conversation timeline", _timeline, lines=False, schema="timeline", per_trace=False),
    View("tree", "execution tree", _tree, lines=False, schema="tree"),
    View("plans", "plan records", _plans, lines=False, schema="plans"),
    View("progress", "progress stream", _progress, lines=True, schema="progress"),
    View("ag-ui", "AG-UI events", _ag_ui, lines=True, schema="ag-ui"),
    View("ai-sdk", "AI SDK UI message stream", _ai_sdk, lines=True, schema="ai-sdk"),
    View("html", "trace page", _pages, lines=False, schema="page", per_trace=False, media="html"),
)

VIEWS: Final[Mapping[str, View]] = {view.name: view for view in _ALL}
