"""OTLP/gRPC ``TraceService/Export`` and ``LogsService/Export`` on their own port (grpcio and the services
generated in ``opentelemetry-proto``), storing through the same path as OTLP/HTTP."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from toolspan.bridge.readers import BridgeReadError, Ctx, ReadReport
from toolspan.server._auth import bearer_token, token_matches
from toolspan.server._ingest.otlp import parse_logs_request
from toolspan.server._ingest.records import rows_of_request
from toolspan.server._store.api import StoreUnavailable

__all__ = ["start_grpc"]

_logger = logging.getLogger(__name__)


def _check_token(token: bytes | None, context: grpc.ServicerContext) -> None:
    if token is not None:
        given = b""
        for key, value in context.invocation_metadata():
            if key == "authorization":
                given = bearer_token(value)
        if not token_matches(given, token):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")


def _checked(context: grpc.ServicerContext, work: Callable[[], Any]) -> Any:
    """``work()``; a request the readers refuse is INVALID_ARGUMENT (never retried), a store that cannot
    take it now UNAVAILABLE (exporters retry it), as OTLP/gRPC asks."""
    try:
        return work()
    except BridgeReadError as e:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e).replace("\n", " "))
    except (sqlite3.Error, StoreUnavailable) as e:
        _logger.error("toolspan serve: the store refused an export: %s", e)
        context.abort(grpc.StatusCode.UNAVAILABLE, f"the store cannot take this request now: {e}")


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, app: Any, token: str | None) -> None:
        self._app = app
        self._token = None if token is None else token.encode()

    def Export(self, request: Any, context: grpc.ServicerContext) -> Any:
        _check_token(self._token, context)
        rows = _checked(context, lambda: rows_of_request(request, Ctx("grpc request", False, ReadReport())))
        result = _checked(context, lambda: self._app.ingest_rows(rows))
        response = trace_service_pb2.ExportTraceServiceResponse()
        if result.rejected:
            response.partial_success.rejected_spans = result.rejected
            response.partial_success.error_message = result.message
        return response


class _LogsService(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, app: Any, token: str | None) -> None:
        self._app = app
        self._token = None if token is None else token.encode()

    def Export(self, request: Any, context: grpc.ServicerContext) -> Any:
        _check_token(self._token, context)
        records, rejected, message = _checked(context, lambda: parse_logs_request(request))
        result = _checked(context, lambda: self._app.ingest_logs(records, rejected, message))
        response = logs_service_pb2.ExportLogsServiceResponse()
        if result.rejected:
            response.partial_success.rejected_log_records = result.rejected
            response.partial_success.error_message = result.message
        return response


def start_grpc(app: Any, host: str, port: int, token: str | None, max_bytes: int) -> tuple[grpc.Server, int]:
    """A started gRPC server with the trace and logs services on ``host:port``, and the port it bound (the
    one given, or the one the system picked for port 0)."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4),
        options=[("grpc.max_receive_message_length", max_bytes)],
    )
    add = trace_service_pb2_grpc.add_TraceServiceServicer_to_server
    add(_TraceService(app, token), server)  # type: ignore[no-untyped-call]
    add_logs = logs_service_pb2_grpc.add_LogsServiceServicer_to_server
    add_logs(_LogsService(app, token), server)  # type: ignore[no-untyped-call]
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot bind OTLP/gRPC to {host}:{port}")
    server.start()
    return server, bound
