"""Views: pure, deterministic functions from neutral spans to the JSON agent frontends read.

Every output carries ``schema_version`` and has a JSON Schema (draft 2020-12) in ``toolspan/bridge/schemas``
(``load_schema(name)``, names in ``SCHEMA_NAMES``):

- ``to_events`` / ``act_event`` / ``observe_event`` / ``match_observe``: the act/observe event stream,
  schema ``events`` (one event);
- ``to_timelines``: one conversation timeline per conversation, schema ``timeline`` (one document);
- ``to_tree`` / ``to_trees``: the trace document with its execution tree, schema ``tree``;
- ``to_plans``: plan records (the plan hierarchy), schema ``plans``;
- ``to_progress``: the progress stream (progress/control/monitor envelopes), schema ``progress`` (one
  envelope);
- ``to_page`` / ``to_pages``: everything the HTML trace page shows of a trace, schema ``page``;
- ``to_ag_ui``: AG-UI events (the Agent-User Interaction Protocol), schema ``ag-ui`` (one event);
  ``messages_snapshot`` folds events into the messages an AG-UI client holds;
- ``to_ai_sdk``: the Vercel AI SDK UI message stream (v1), schema ``ai-sdk`` (one chunk);
- ``audit``: a policy audit report with the marked execution trees, schema ``audit``; ``mark_pages`` puts
  its findings on the page documents (schema ``page``).

Input spans may come in any order, with duplicates, orphans, cycles and spans that never ended: every view
coalesces them first (``toolspan.bridge._coalesce``) and never drops a span record.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, Final

from toolspan.bridge.classify import classify
from toolspan.bridge.views._agui import messages_snapshot, to_ag_ui
from toolspan.bridge.views._aisdk import to_ai_sdk
from toolspan.bridge.views._audit import audit, mark_pages
from toolspan.bridge.views._common import SCHEMA_VERSION
from toolspan.bridge.views._events import act_event, match_observe, observe_event, to_events
from toolspan.bridge.views._page import to_page, to_pages
from toolspan.bridge.views._plans import to_plans
from toolspan.bridge.views._progress import AUTO_SEAL_RESULT, to_progress
from toolspan.bridge.views._timeline import to_timelines
from toolspan.bridge.views._tree import to_tree, to_trees

__all__ = [
    "AUTO_SEAL_RESULT",
    "SCHEMA_NAMES",
    "SCHEMA_VERSION",
    "act_event",
    "audit",
    "classify",
    "load_schema",
    "mark_pages",
    "match_observe",
    "messages_snapshot",
    "observe_event",
    "to_ag_ui",
    "to_ai_sdk",
    "to_events",
    "to_page",
    "to_pages",
    "to_plans",
    "to_progress",
    "to_timelines",
    "to_tree",
    "to_trees",
]

SCHEMA_NAMES: Final = (
    "events",
    "timeline",
    "tree",
    "plans",
    "progress",
    "page",
    "audit",
    "ag-ui",
    "ai-sdk",
)


@cache
def _schema_text(name: str) -> str:
    if name not in SCHEMA_NAMES:
        raise ValueError(f"unknown schema {name!r}; expected one of {', '.join(SCHEMA_NAMES)}")
    return (
        resources.files("toolspan.bridge")
        .joinpath("schemas")
        .joinpath(f"{name}.schema.json")
        .read_text("utf-8")
    )


def load_schema(name: str) -> dict[str, Any]:
    """The JSON Schema (a fresh dict) of one of ``SCHEMA_NAMES`` (``events``, ``tree``, ``page``, ...)."""
    schema: dict[str, Any] = json.loads(_schema_text(name))
    return schema
