"""The stored form of a neutral span: compact JSON that decodes to an equal ``Span``.

Fields are kept positionally (no keys repeated per row); ``origin`` is not stored (it only names where a
record was read from). Attribute dicts keep their order, numbers keep int/float, so
``decode(encode(span)) == replace(span, origin="")``.
"""

from __future__ import annotations

import json

from toolspan.bridge.model import Span, span_fields, span_from_fields

__all__ = ["decode", "encode"]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def encode(span: Span) -> str:
    return _dumps(span_fields(span))


def decode(text: str) -> Span:
    return span_from_fields(json.loads(text))
