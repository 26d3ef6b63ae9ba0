"""The stored form of a neutral span: compact JSON that decodes to an equal ``Span``.

Fields are kept positionally (no keys repeated per row); ``origin`` is not stored (it only names where a
record was read from). Attribute dicts keep their order, numbers keep int/float, so
``decode(encode(span)) == replace(span, origin="")``.
"""

from __future__ import annotations

import json
from typing import Any

from toolspan.bridge.model import Span, SpanEvent, SpanLink

__all__ = ["decode", "encode"]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def encode(span: Span) -> str:
    return _dumps(
        [
            span.trace_id,
            span.span_id,
            span.parent_span_id,
            span.name,
            span.start_ns,
            span.end_ns,
            span.kind,
            span.status,
            span.status_message,
            dict(span.attributes),
            [[e.name, e.time_ns, dict(e.attributes)] for e in span.events],
            [[li.trace_id, li.span_id, dict(li.attributes)] for li in span.links],
            dict(span.resource),
            span.scope,
        ]
    )


def decode(text: str) -> Span:
    row: list[Any] = json.loads(text)
    return Span(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        row[7],
        row[8],
        row[9],
        tuple(SpanEvent(e[0], e[1], e[2]) for e in row[10]),
        tuple(SpanLink(li[0], li[1], li[2]) for li in row[11]),
        row[12],
        row[13],
    )
