"""Turn spans from any source back into the timelines and trees agent frontends draw.

Readers (``toolspan.bridge.readers``) produce neutral spans (``toolspan.bridge.model.Span``); the views
(``toolspan.bridge.views``, re-exported here) turn them into the JSON agent frontends read.
``classify`` is not re-exported here: ``toolspan.bridge.classify`` stays the module of that name.
"""

from __future__ import annotations

from toolspan.bridge.views import (
    SCHEMA_VERSION,
    act_event,
    load_schema,
    match_observe,
    observe_event,
    to_events,
    to_plans,
    to_progress,
    to_timelines,
    to_tree,
    to_trees,
)

__all__ = [
    "SCHEMA_VERSION",
    "act_event",
    "load_schema",
    "match_observe",
    "observe_event",
    "to_events",
    "to_plans",
    "to_progress",
    "to_timelines",
    "to_tree",
    "to_trees",
]
