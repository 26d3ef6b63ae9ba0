"""The views' internal names: what toolspan's own server and backends reach beyond the public
``toolspan.bridge.views`` (exactly what ``docs/bridge.md`` documents): the frontends' live streams' pieces,
the shared time and trace helpers. Not public API: these names change without notice; an import contract
(``pyproject.toml``) lets only those packages import this module.
"""

from __future__ import annotations

from toolspan.bridge.views._agui import ag_ui_run_events
from toolspan.bridge.views._aisdk import AI_SDK_HEADER, ai_sdk_run_chunks
from toolspan.bridge.views._common import NS_PER_MS, TraceIndex, duration_ms, group_traces, iso
from toolspan.bridge.views._page import page_head
from toolspan.bridge.views._progress import AUTO_SEAL_RESULT
from toolspan.bridge.views._runs import Item as TurnItem
from toolspan.bridge.views._runs import Run as Turn
from toolspan.bridge.views._runs import to_runs as to_turns

__all__ = [
    "AI_SDK_HEADER",
    "AUTO_SEAL_RESULT",
    "NS_PER_MS",
    "TraceIndex",
    "Turn",
    "TurnItem",
    "ag_ui_run_events",
    "ai_sdk_run_chunks",
    "duration_ms",
    "group_traces",
    "iso",
    "page_head",
    "to_turns",
]
