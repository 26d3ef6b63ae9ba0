"""An OTLP protobuf ``ExportTraceServiceRequest`` as the store's rows, without building full spans: each
span's columns come from a partial span (``INDEX_KEYS`` only), and it is stored as the protobuf bytes it came
in, behind its resource and scope (``codec.proto_header``)."""

from __future__ import annotations

from typing import Any, Final

from toolspan.bridge.readers import Ctx, bad_times
from toolspan.bridge.readers import proto_resource_attributes as resource_attributes
from toolspan.bridge.readers import proto_span as span_of
from toolspan.server._rows.codec import proto_header
from toolspan.server._rows.spans import INDEX_KEYS, MAX_STORED_NS, Row, row_of

__all__ = ["bad_id_or_time", "rows_of_request"]

_ID_BYTES: Final = (("trace_id", 16), ("span_id", 8), ("parent_span_id", 8))


def bad_id_or_time(sp: Any) -> tuple[str, str] | None:
    """``(field, reason)`` when a protobuf ``Span`` has an id of the wrong length (OTLP: a trace id of 16
    bytes, span ids of 8; an empty one means missing) or a time the store cannot keep, else ``None``."""
    for name, size in _ID_BYTES:
        length = len(getattr(sp, name))
        if length not in (0, size):
            return name, f"{length} bytes, expected {size}"
    for name in ("start_time_unix_nano", "end_time_unix_nano"):
        value = getattr(sp, name)
        if value > MAX_STORED_NS:
            return name, f"{value} is past 2**63-1 ns (the year 2262), the latest time the server stores"
    return None


def rows_of_request(request: Any, ctx: Ctx) -> list[Row]:
    """The rows of a parsed ``ExportTraceServiceRequest``, each span stored as its protobuf bytes; a span
    that ends before it starts fails ``ctx`` as the bridge reader does, and so does one with an id of the
    wrong length or a time past what SQLite stores (``bad_id_or_time``)."""
    rows: list[Row] = []
    keys = INDEX_KEYS
    for r, rs in enumerate(request.resource_spans):
        resource = resource_attributes(rs)
        resource_bytes = rs.resource.SerializeToString()
        for s, ss in enumerate(rs.scope_spans):
            scope = ss.scope.name
            header = proto_header(resource_bytes, ss.scope.SerializeToString())
            for i, sp in enumerate(ss.spans):
                end = sp.end_time_unix_nano
                if end and end < sp.start_time_unix_nano:
                    ctx.fail(*(bad_times(sp, r, s, i) or ("", "")))
                    continue
                bad = bad_id_or_time(sp)
                if bad is not None:
                    ctx.fail(f"resource_spans[{r}].scope_spans[{s}].spans[{i}].{bad[0]}", bad[1])
                    continue
                partial = span_of(sp, resource, scope, "", keys)
                rows.append(row_of(partial, header + sp.SerializeToString()))
    return rows
