"""The OpenTelemetry ``LoggerProvider`` ``configure()`` installs, so ``toolspan.text_delta`` chunks travel
the ordinary OTLP logs pipeline (one log record per chunk, see ``toolspan._instrument.deltas``).

Only when the application has none (a ``LoggerProvider`` already installed is kept as it is, and its
owner decides where records go). Exporters come from ``OTEL_LOGS_EXPORTER`` (comma list: ``otlp``,
``otlp_proto_grpc``, ``otlp_proto_http``, ``console``, ``none``); unset, it means ``otlp`` when
``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` is set, otherwise none (exactly
as for traces). ``otlp`` follows ``OTEL_EXPORTER_OTLP_LOGS_PROTOCOL`` / ``OTEL_EXPORTER_OTLP_PROTOCOL``
(``grpc`` default, or ``http/protobuf``); endpoint, headers and timeout are read by the exporters. Each
runs behind a ``BatchLogRecordProcessor`` (``OTEL_BLRP_*``). The provider shares the tracer provider's
resource and is shut down (flushed) at exit.
"""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry.sdk.resources import Resource

from toolspan._util import env as _env

__all__ = ["configure_logs", "log_exporter_names"]

_logger = logging.getLogger(__name__)


def log_exporter_names() -> list[str]:
    """The log exporters the environment asks for, resolved (``otlp`` -> its protocol's name)."""
    names = [name.lower() for name in _env.get_list(_env.OTEL_LOGS_EXPORTER)]
    if _env.get(_env.OTEL_LOGS_EXPORTER) is None and (
        _env.get(_env.OTEL_EXPORTER_OTLP_ENDPOINT) or _env.get(_env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT)
    ):
        names = ["otlp"]
    protocol = _env.get(_env.OTEL_EXPORTER_OTLP_LOGS_PROTOCOL) or _env.get(_env.OTEL_EXPORTER_OTLP_PROTOCOL)
    otlp = "otlp_proto_http" if (protocol or "").strip().lower() == "http/protobuf" else "otlp_proto_grpc"
    if "none" in names:
        return []
    out: list[str] = []
    for name in names:
        resolved = otlp if name == "otlp" else name
        if resolved not in out:
            out.append(resolved)
    return out


def _exporter(name: str) -> Any:
    if name == "otlp_proto_http":
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpExporter

        return HttpExporter()
    if name == "otlp_proto_grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcExporter

        return GrpcExporter()
    if name == "console":
        from opentelemetry.sdk._logs.export import ConsoleLogRecordExporter

        return ConsoleLogRecordExporter()
    return None


def configure_logs(resource: Resource | None) -> Any:
    """Install a ``LoggerProvider`` with the environment's exporters when none is installed and the
    environment asks for one; returns the provider in use (``None`` when there is none). Never raises."""
    try:
        from opentelemetry import _logs
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

        current = _logs.get_logger_provider()
        if isinstance(current, LoggerProvider):
            return current
        exporters = []
        for name in log_exporter_names():
            exporter = _exporter(name)
            if exporter is None:
                _logger.warning("toolspan: unknown OTEL_LOGS_EXPORTER %r; skipped", name)
            else:
                exporters.append((name, exporter))
        if not exporters:
            return None
        provider = LoggerProvider(resource=resource) if resource is not None else LoggerProvider()
        for _, exporter in exporters:
            provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
        _logs.set_logger_provider(provider)
        _logger.info("toolspan: installed a LoggerProvider with %s", ", ".join(name for name, _ in exporters))
        return _logs.get_logger_provider()
    except Exception:
        _logger.exception("toolspan: could not set up the logs pipeline; text deltas stay in-process")
        return None
