"""The readers' internal names: what toolspan's own packages read of this package beyond its public facade
(``docs/bridge.md``), re-exported by ``toolspan.bridge.internal``, their one door. Not public API."""

from __future__ import annotations

from toolspan.bridge.readers._detect import describe
from toolspan.bridge.readers._logs import (
    LogRecord,
    attach_logs,
    is_logs_document,
    logs_from_bytes,
    logs_from_json,
    logs_from_proto,
)
from toolspan.bridge.readers._otlp_proto import attributes as proto_attributes
from toolspan.bridge.readers._otlp_proto import bad_times
from toolspan.bridge.readers._otlp_proto import parse_request as parse_trace_request
from toolspan.bridge.readers._otlp_proto import resource_attributes as proto_resource_attributes
from toolspan.bridge.readers._otlp_proto import span_of as proto_span
from toolspan.bridge.readers._report import Ctx
from toolspan.bridge.readers._sources import resolve_inputs
from toolspan.bridge.readers._values import ZERO_SPAN, ZERO_TRACE

__all__ = [
    "Ctx",
    "LogRecord",
    "ZERO_SPAN",
    "ZERO_TRACE",
    "attach_logs",
    "bad_times",
    "describe",
    "is_logs_document",
    "logs_from_bytes",
    "logs_from_json",
    "logs_from_proto",
    "parse_trace_request",
    "proto_attributes",
    "proto_resource_attributes",
    "proto_span",
    "resolve_inputs",
]
