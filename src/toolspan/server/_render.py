"""Spans to response bytes, exactly as ``toolspan convert`` writes them (the server is a thin shell).

``events``, ``progress``, ``ag-ui`` and ``ai-sdk`` are JSON Lines (``convert --to events --sorted`` / ``--to
progress`` / ``--to ag-ui`` / ``--to ai-sdk``); ``tree``
(one trace document), ``plans`` and ``timeline`` are one JSON document followed by a newline.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any, Final

from toolspan.bridge import views
from toolspan.bridge.model import Span
from toolspan.bridge.readers._json import write_json_lines

__all__ = ["LINES", "TARGETS", "document_bytes", "render"]

TARGETS: Final = ("events", "tree", "plans", "progress", "timeline", "ag-ui", "ai-sdk")
LINES: Final = frozenset({"events", "progress", "ag-ui", "ai-sdk"})


def document_bytes(document: Any) -> bytes:
    return (json.dumps(document, ensure_ascii=False) + "\n").encode("utf-8")


def _lines(items: Sequence[Any]) -> bytes:
    out = io.BytesIO()
    write_json_lines(items, out)
    return out.getvalue()


def tree_document(spans: Sequence[Span]) -> Any:
    trees = views.to_trees(list(spans))
    return trees[0] if len(trees) == 1 else trees


def render(target: str, spans: Sequence[Span]) -> bytes:
    """The bytes of view ``target`` of ``spans``."""
    if target == "events":
        return _lines(views.to_events(spans))
    if target == "progress":
        return _lines(views.to_progress(list(spans)))
    if target == "ag-ui":
        return _lines(views.to_ag_ui(list(spans)))
    if target == "ai-sdk":
        return _lines(views.to_ai_sdk(list(spans)))
    if target == "tree":
        return document_bytes(tree_document(spans))
    if target == "plans":
        return document_bytes(views.to_plans(list(spans)))
    if target == "timeline":
        return document_bytes(views.to_timelines(list(spans)))
    raise ValueError(f"unknown view {target!r}")
