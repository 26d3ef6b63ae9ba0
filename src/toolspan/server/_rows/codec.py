"""The stored forms of a span, both decoding to the neutral ``Span`` the bridge reader would give.

- ``bytes``: a span received as OTLP protobuf, stored as received: ``proto_header`` (its resource and its
  scope) then the serialized ``Span``. Read back through the bridge's protobuf reader, so a stored span
  reads exactly as ``toolspan convert`` reads the request.
- ``str``: compact JSON of the span's fields (positional, no keys repeated per row): spans received as OTLP
  JSON, and spans merged from two records. Attribute dicts keep their order, numbers keep int/float.

``origin`` is not stored (it only names where a record was read from): ``decode(encode(span)) ==
replace(span, origin="")``.
"""

from __future__ import annotations

import json
import struct
from functools import cache, lru_cache
from typing import Any, Final

from toolspan.bridge.internal import proto_attributes as attributes
from toolspan.bridge.internal import proto_span as span_of
from toolspan.bridge.model import Span, span_fields, span_from_fields

__all__ = ["decode", "encode", "preload", "proto_header"]

_LENGTHS: Final = struct.Struct(">II")
_HEADERS: Final = 256

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def encode(span: Span) -> str:
    return _dumps(span_fields(span))


@cache
def _types() -> tuple[Any, Any, Any]:
    from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource
    from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

    return Resource, InstrumentationScope, ProtoSpan


def preload() -> None:
    """Load the protobuf types a stored span decodes with (about 11 ms of imports): a server calls this as it
    starts, so its first read of a trace does not pay for them."""
    _types()


@lru_cache(maxsize=_HEADERS)
def _header(header: bytes) -> tuple[dict[str, Any], str]:
    """The resource attributes and scope name of a ``proto_header`` (spans of one process share one)."""
    resource_type, scope_type, _ = _types()
    resource_len, scope_len = _LENGTHS.unpack_from(header)
    scope_at = _LENGTHS.size + resource_len
    resource = resource_type.FromString(header[_LENGTHS.size : scope_at])
    scope = scope_type.FromString(header[scope_at : scope_at + scope_len])
    return attributes(resource.attributes), scope.name


def decode(data: str | bytes) -> Span:
    if isinstance(data, str):
        return span_from_fields(json.loads(data))
    resource_len, scope_len = _LENGTHS.unpack_from(data)
    span_at = _LENGTHS.size + resource_len + scope_len
    resource, scope = _header(data[:span_at])
    return span_of(_types()[2].FromString(data[span_at:]), resource, scope, "")


def proto_header(resource: bytes, scope: bytes) -> bytes:
    """The stored form's prefix for spans of one resource and scope: both lengths (4 bytes each, big
    endian), then the serialized ``Resource`` and ``InstrumentationScope``."""
    return _LENGTHS.pack(len(resource), len(scope)) + resource + scope
