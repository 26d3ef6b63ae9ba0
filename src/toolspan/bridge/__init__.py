"""The bridge: spans from any source back into the JSON shapes agent frontends draw. Pure and deterministic;
it imports nothing of the instrumentation, the server or the CLI.

Its public API, for applications and for toolspan's own server, CLI, exporters and replay (names load on
first use; ``docs/bridge.md`` documents each public module's names, and what toolspan's own packages read
beyond them is ``toolspan.bridge.internal`` and ``toolspan.bridge.views.internal``, not public API):

- **the model**: ``Span``, ``SpanEvent``, ``SpanLink`` (``toolspan.bridge.model``);
- **reading** (``toolspan.bridge.readers``): ``read_spans``, ``iter_spans``, ``spans_from_document``,
  ``from_readable_spans``, ``BridgeReadError``, ``ReadReport``;
- **one span's facts** (``toolspan.bridge.facts``): ``classify``, ``tool_call``, ``approvals``, ...;
- **views** (``toolspan.bridge.views``): ``to_events``, ``to_timelines``, ``to_trees``, ``to_plans``,
  ``to_progress``, ``to_pages``, ``audit``; and ``VIEWS``, the one registry of views (name, function,
  JSON Lines or one document, schema) that the CLI, the server's routes and its OpenAPI document read;
- **coalescing and writing**: ``coalesce`` (spans in start order, duplicates and pending records
  merged), ``to_otlp_json`` (spans back to an OTLP/JSON request), ``write_json_lines`` and
  ``dumps_document`` (the JSON every output of toolspan is written with).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolspan._util.lazy import lazy

# The one facade of the bridge that loads on first use, so each name is written three times here (for the
# type checker, for the loader, in ``__all__``): Python runs this file for every import below it, and
# ``import toolspan.bridge.model`` must load the model alone. The readers', facts' and views' facades import
# what they export (each name twice: its import and ``__all__``).
if TYPE_CHECKING:
    from toolspan.bridge._coalesce import coalesce, duplicate_flags
    from toolspan.bridge._json_write import dumps_document, write_json_lines
    from toolspan.bridge._otlp_write import to_otlp_json
    from toolspan.bridge.model import Span, SpanEvent, SpanLink
    from toolspan.bridge.readers import (
        BridgeReadError,
        ReadReport,
        from_readable_spans,
        iter_spans,
        read_spans,
        spans_from_document,
    )
    from toolspan.bridge.views import (
        SCHEMA_VERSION,
        VIEWS,
        View,
        act_event,
        audit,
        load_schema,
        mark_pages,
        match_observe,
        observe_event,
        to_events,
        to_pages,
        to_plans,
        to_progress,
        to_timelines,
        to_tree,
        to_trees,
    )

_READERS = "toolspan.bridge.readers"
_VIEWS = "toolspan.bridge.views"
_WHERE: dict[str, str | tuple[str, str]] = {
    "coalesce": "toolspan.bridge._coalesce",
    "duplicate_flags": "toolspan.bridge._coalesce",
    "to_otlp_json": "toolspan.bridge._otlp_write",
    "dumps_document": "toolspan.bridge._json_write",
    "write_json_lines": "toolspan.bridge._json_write",
    **dict.fromkeys(("Span", "SpanEvent", "SpanLink"), "toolspan.bridge.model"),
    **dict.fromkeys(
        (
            "BridgeReadError",
            "ReadReport",
            "from_readable_spans",
            "iter_spans",
            "read_spans",
            "spans_from_document",
        ),
        _READERS,
    ),
    **dict.fromkeys(
        (
            "SCHEMA_VERSION",
            "VIEWS",
            "View",
            "act_event",
            "audit",
            "load_schema",
            "mark_pages",
            "match_observe",
            "observe_event",
            "to_events",
            "to_pages",
            "to_plans",
            "to_progress",
            "to_timelines",
            "to_tree",
            "to_trees",
        ),
        _VIEWS,
    ),
}

__all__ = [
    "BridgeReadError",
    "ReadReport",
    "SCHEMA_VERSION",
    "Span",
    "SpanEvent",
    "SpanLink",
    "VIEWS",
    "View",
    "act_event",
    "audit",
    "coalesce",
    "dumps_document",
    "duplicate_flags",
    "from_readable_spans",
    "iter_spans",
    "load_schema",
    "mark_pages",
    "match_observe",
    "observe_event",
    "read_spans",
    "spans_from_document",
    "to_events",
    "to_otlp_json",
    "to_pages",
    "to_plans",
    "to_progress",
    "to_timelines",
    "to_tree",
    "to_trees",
    "write_json_lines",
]


__getattr__, __dir__ = lazy(globals(), _WHERE)
