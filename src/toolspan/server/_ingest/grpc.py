"""OTLP/gRPC ``TraceService/Export`` and ``LogsService/Export`` on their own port (grpcio and the services
generated in ``opentelemetry-proto``), storing through the same path as OTLP/HTTP (a ``Sink``: the server's
state) and admitting what its ``authorize`` check admits (the server's tokens, ``_http.auth``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent import futures
from typing import Any, Protocol

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from toolspan.bridge.readers import BridgeReadError, Ctx, LogRecord, ReadReport
from toolspan.server._ingest.otlp import parse_logs_request
from toolspan.server._ingest.protobuf import rows_of_request
from toolspan.server._rows.errors import STORE_BUSY
from toolspan.server._rows.spans import IngestResult, Row

__all__ = ["Authorize", "Sink", "start_grpc"]

_logger = logging.getLogger(__name__)

# Whether a request whose ``authorization`` metadata is the value given (``None``: none sent) may send spans.
Authorize = Callable[[str | None], bool]


class Sink(Protocol):
    """Where exports are stored (any thread): the server's state."""

    def ingest_rows(self, rows: list[Row]) -> IngestResult: ...
    def ingest_logs(self, records: list[LogRecord], rejected: int, message: str) -> IngestResult: ...


def _check(authorize: Authorize | None, context: grpc.ServicerContext) -> None:
    if authorize is None:
        return
    given = None
    for key, value in context.invocation_metadata():
        if key == "authorization":
            given = value if isinstance(value, str) else value.decode("latin-1")
    if not authorize(given):
        context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")


def _checked(context: grpc.ServicerContext, work: Callable[[], Any]) -> Any:
    """``work()``; a request the readers refuse is INVALID_ARGUMENT (never retried), a store that cannot
    take it now UNAVAILABLE (exporters retry it), as OTLP/gRPC asks."""
    try:
        return work()
    except BridgeReadError as e:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e).replace("\n", " "))
    except STORE_BUSY as e:
        _logger.error("toolspan serve: the store refused an export: %s", e)
        context.abort(grpc.StatusCode.UNAVAILABLE, f"the store cannot take this request now: {e}")


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, sink: Sink, authorize: Authorize | None) -> None:
        self._sink = sink
        self._authorize = authorize

    def Export(self, request: Any, context: grpc.ServicerContext) -> Any:
        _check(self._authorize, context)
        rows = _checked(context, lambda: rows_of_request(request, Ctx("grpc request", False, ReadReport())))
        result = _checked(context, lambda: self._sink.ingest_rows(rows))
        response = trace_service_pb2.ExportTraceServiceResponse()
        if result.rejected:
            response.partial_success.rejected_spans = result.rejected
            response.partial_success.error_message = result.message
        return response


class _LogsService(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, sink: Sink, authorize: Authorize | None) -> None:
        self._sink = sink
        self._authorize = authorize

    def Export(self, request: Any, context: grpc.ServicerContext) -> Any:
        _check(self._authorize, context)
        records, rejected, message = _checked(context, lambda: parse_logs_request(request))
        result = _checked(context, lambda: self._sink.ingest_logs(records, rejected, message))
        response = logs_service_pb2.ExportLogsServiceResponse()
        if result.rejected:
            response.partial_success.rejected_log_records = result.rejected
            response.partial_success.error_message = result.message
        return response


def start_grpc(
    sink: Sink, host: str, port: int, authorize: Authorize | None, max_bytes: int
) -> tuple[grpc.Server, int]:
    """A started gRPC server with the trace and logs services on ``host:port`` (``authorize``: ``None``,
    every request may send), and the port it bound (the one given, or the one the system picked for 0)."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4),
        options=[("grpc.max_receive_message_length", max_bytes)],
    )
    add = trace_service_pb2_grpc.add_TraceServiceServicer_to_server
    add(_TraceService(sink, authorize), server)  # type: ignore[no-untyped-call]
    add_logs = logs_service_pb2_grpc.add_LogsServiceServicer_to_server
    add_logs(_LogsService(sink, authorize), server)  # type: ignore[no-untyped-call]
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot bind OTLP/gRPC to {host}:{port}")
    server.start()
    return server, bound
