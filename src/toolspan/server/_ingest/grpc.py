"""OTLP/gRPC ``TraceService/Export`` and ``LogsService/Export`` on their own port (grpcio and the services
generated in ``opentelemetry-proto``), storing through the same path as OTLP/HTTP (a ``Sink``: the server's
state) and admitting what its ``authorize`` check admits (the server's tokens, ``_http.auth``)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from concurrent import futures
from typing import Any, Protocol
from urllib.parse import unquote

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from toolspan.bridge.internal import Ctx, LogRecord
from toolspan.bridge.readers import BridgeReadError, ReadReport
from toolspan.server._ingest.otlp import parse_logs_request
from toolspan.server._ingest.protobuf import rows_of_request
from toolspan.server._rows.errors import STORE_BUSY
from toolspan.server._rows.spans import IngestResult, Row

__all__ = ["Authorize", "Sink", "start_grpc"]

_logger = logging.getLogger(__name__)

# Whether an export whose ``authorization`` metadata is the value given (``None``: none sent), from the client
# address given, may send spans: ``(admitted, wait_s)``, ``wait_s`` > 0 when that address sent too many wrong
# tokens lately and must wait that long.
Authorize = Callable[[str | None, str], tuple[bool, float]]


class Sink(Protocol):
    """Where exports are stored (any thread): the server's state."""

    def ingest_rows(self, rows: list[Row]) -> IngestResult: ...
    def ingest_logs(self, records: list[LogRecord], rejected: int, message: str) -> IngestResult: ...


def _peer_address(peer: str) -> str:
    """The client address of a gRPC peer (``ipv4:127.0.0.1:5000``, ``ipv6:%5B::1%5D:5000``), as HTTP's."""
    kind, _, address = unquote(peer).partition(":")
    if kind in ("ipv4", "ipv6") and ":" in address:
        address = address.rsplit(":", 1)[0]
    return address.strip("[]") or peer


def _check(authorize: Authorize | None, context: grpc.ServicerContext) -> None:
    if authorize is None:
        return
    given = None
    for key, value in context.invocation_metadata():
        if key == "authorization":
            given = value if isinstance(value, str) else value.decode("latin-1")
    admitted, wait_s = authorize(given, _peer_address(context.peer()))
    if wait_s > 0:
        context.abort(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"too many wrong bearer tokens from this address: retry in {math.ceil(wait_s)} s",
        )
    if not admitted:
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
