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
  ``page_delta`` / ``apply_page_delta``: what changed between two page documents of a trace, keyed by span
  id (``step_keys``), schema ``page-delta``: what the server's live page stream sends;
  ``run_name``: the one name of a run (its ``title``, the server's trace list and inbox), ``request_text``:
  what the user asked, as a span recorded it;
- ``to_ag_ui``: AG-UI events (the Agent-User Interaction Protocol), schema ``ag-ui`` (one event);
  ``messages_snapshot`` folds events into the messages an AG-UI client holds;
- ``to_ai_sdk``: the Vercel AI SDK UI message stream (v1), schema ``ai-sdk`` (one chunk);
- ``audit``: a policy audit report with the marked execution trees, schema ``audit``; ``mark_pages`` puts
  its findings on the page documents (schema ``page``).

``VIEWS`` (``registry``) is the one list of the views a trace can be converted to: its name, what it does,
its function, whether it is JSON Lines or one document, its schema. ``toolspan convert --to``, the
server's ``/api/traces/{id}/{view}`` routes and its OpenAPI document are all made from it.

Input spans may come in any order, with duplicates, orphans, cycles and spans that never ended: every view
coalesces them first (``toolspan.bridge._coalesce``) and never drops a span record.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, Final

from toolspan.bridge.views._agui import messages_snapshot, to_ag_ui
from toolspan.bridge.views._aisdk import to_ai_sdk
from toolspan.bridge.views._audit import audit, mark_pages
from toolspan.bridge.views._common import SCHEMA_VERSION
from toolspan.bridge.views._events import act_event, match_observe, observe_event, to_events
from toolspan.bridge.views._names import request_text, run_name
from toolspan.bridge.views._page import to_page, to_pages
from toolspan.bridge.views._page_delta import apply_page_delta, page_delta, step_keys
from toolspan.bridge.views._plans import to_plans
from toolspan.bridge.views._progress import to_progress
from toolspan.bridge.views._timeline import to_timelines
from toolspan.bridge.views._tree import to_tree, to_trees
from toolspan.bridge.views.registry import VIEWS, View

# Exactly what docs/bridge.md documents (its test holds them to it); what toolspan's own server and backends
# read beyond these is ``toolspan.bridge.views.internal``.
__all__ = [
    "SCHEMA_NAMES",
    "SCHEMA_VERSION",
    "VIEWS",
    "View",
    "act_event",
    "apply_page_delta",
    "audit",
    "load_schema",
    "mark_pages",
    "match_observe",
    "messages_snapshot",
    "observe_event",
    "page_delta",
    "request_text",
    "run_name",
    "step_keys",
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
    "page-delta",
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
