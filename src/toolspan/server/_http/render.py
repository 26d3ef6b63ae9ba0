"""Spans to response bytes, exactly as ``toolspan convert`` writes them (the server is a thin shell): the
views of the bridge's registry (``VIEWS``) served for one trace, JSON Lines or one JSON document followed by a
newline.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from toolspan.bridge import dumps_document, write_json_lines
from toolspan.bridge.model import Span
from toolspan.bridge.views.registry import VIEWS

__all__ = ["document_bytes", "render", "tree_document"]


def document_bytes(document: Any) -> bytes:
    """One JSON document and a newline, strict UTF-8 JSON whatever it holds (``dumps_document``)."""
    return dumps_document(document) + b"\n"


def _lines(items: Sequence[Any]) -> bytes:
    out = io.BytesIO()
    write_json_lines(items, out)
    return out.getvalue()


def tree_document(spans: Sequence[Span]) -> Any:
    return VIEWS["tree"].build(spans)


def render(target: str, spans: Sequence[Span]) -> bytes:
    """The bytes of view ``target`` of ``spans``."""
    view = VIEWS.get(target)
    if view is None or view.media != "json":
        raise ValueError(f"unknown view {target!r}")
    built = view.build(spans)
    return _lines(built) if view.lines else document_bytes(built)
