"""Which span processors ``configure()`` attaches: exporters named or given, the environment's
(``OTEL_TRACES_EXPORTER``, OTLP endpoint and protocol, ``TOOLSPAN_PENDING_SPANS``), files, and the batch
processor settings (``OTEL_BSP_*``, with working fallbacks), each attached once per provider."""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Iterable, Sequence
from importlib.metadata import entry_points
from typing import Any, Final

from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from toolspan._util import env as _env

__all__ = ["EXPORTER_ENTRY_POINT_GROUP", "Part", "attach", "describe", "env_parts", "explicit_parts"]

_logger = logging.getLogger(__name__)

EXPORTER_ENTRY_POINT_GROUP: Final = "opentelemetry_traces_exporter"

_BSP_QUEUE: Final = 2048
_BSP_BATCH: Final = 512
_BSP_DELAY_MS: Final = 5000
_BSP_TIMEOUT_MS: Final = 30000
_OTLP_BY_PROTOCOL: Final = {"grpc": "otlp_proto_grpc", "http/protobuf": "otlp_proto_http"}

_attached: weakref.WeakKeyDictionary[TracerProvider, set[object]] = weakref.WeakKeyDictionary()


# A part to attach: (identity key for idempotence, label for the log, maker of its SpanProcessor).
Part = tuple[object, str, Any]


def explicit_parts(
    exporters: Sequence[str | SpanExporter] | None,
    console: bool,
    file: str | os.PathLike[str] | None,
    processors: list[SpanProcessor],
) -> list[Part]:
    parts: list[Part] = []
    for item in exporters or ():
        if isinstance(item, str):
            parts.extend(_named_parts([item]))
        else:
            parts.append((item, type(item).__name__, _batch(item)))
    if console:
        parts.append(("exporter:console", "console", lambda: _batch_processor(ConsoleSpanExporter())))
    if file is not None:
        path = os.path.abspath(os.fspath(file))
        parts.append((f"file:{path}", f"file {path}", lambda: _file_processor(path)))
    for processor in processors:
        parts.append((processor, type(processor).__name__, lambda p=processor: p))
    return parts


def _batch(exporter: SpanExporter) -> Any:
    return lambda: _batch_processor(exporter)


def _batch_processor(exporter: SpanExporter) -> BatchSpanProcessor:
    """A BatchSpanProcessor (queue capped by OTEL_BSP_MAX_QUEUE_SIZE, 2048 by default).

    ``OTEL_BSP_*`` values the SDK refuses (a queue of 0 or less, a batch larger than the queue, a delay
    of 0 or less, ...) would leave no processor at all, every span lost: they fall back to working
    values (the queue size when it is a positive number, else 2048; batches of at most 512 spans) with
    one warning.
    """
    try:
        return BatchSpanProcessor(exporter)
    except ValueError as exc:
        reason = str(exc).rstrip(".")
    raw = _env.get(_env.OTEL_BSP_MAX_QUEUE_SIZE)
    try:
        queue = int(raw) if raw is not None else _BSP_QUEUE
    except ValueError:
        queue = _BSP_QUEUE
    queue = queue if queue >= 1 else _BSP_QUEUE
    batch = min(queue, _BSP_BATCH)
    _logger.warning(
        "toolspan: OTEL_BSP_* settings refused by the batch span processor (%s); falling back to a queue "
        "of %d spans exported in batches of at most %d",
        reason,
        queue,
        batch,
    )
    try:
        return BatchSpanProcessor(exporter, max_queue_size=queue, max_export_batch_size=batch)
    except ValueError:  # the delay or timeout is bad too: the SDK defaults for everything
        return BatchSpanProcessor(
            exporter,
            max_queue_size=queue,
            schedule_delay_millis=_BSP_DELAY_MS,
            max_export_batch_size=batch,
            export_timeout_millis=_BSP_TIMEOUT_MS,
        )


def env_parts() -> list[Part]:
    names = [name.lower() for name in _env.get_list(_env.OTEL_TRACES_EXPORTER)]
    if _env.get(_env.OTEL_TRACES_EXPORTER) is None and (
        _env.get(_env.OTEL_EXPORTER_OTLP_ENDPOINT) or _env.get(_env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
    ):
        names = ["otlp"]
    return _named_parts(names) + _pending_parts(names)


def _pending_parts(names: list[str]) -> list[Part]:
    """With ``TOOLSPAN_PENDING_SPANS``, tool spans also go out over OTLP when they start (``all``: every
    span, agents and plans too)."""
    whole_runs = (_env.get(_env.TOOLSPAN_PENDING_SPANS) or "").lower() == "all"
    if not (whole_runs or _env.get_bool(_env.TOOLSPAN_PENDING_SPANS)) or "otlp" not in names:
        return []
    from toolspan.exporters.pending import PendingSpanProcessor

    if whole_runs:
        return [
            (
                "pending:otlp",
                "pending records of every span over OTLP",
                lambda: PendingSpanProcessor(tools_only=False),
            )
        ]
    return [("pending:otlp", "pending records over OTLP", PendingSpanProcessor)]


def _named_parts(names: Iterable[str]) -> list[Part]:
    parts: list[Part] = []
    for raw in names:
        name = _resolve_name(raw)
        if name is not None:
            parts.append((f"exporter:{name}", name, lambda n=name: _named_processor(n)))
    return parts


def _resolve_name(raw: str) -> str | None:
    name = raw.strip().lower()
    if not name or name == "none":
        return None
    if name != "otlp":
        return name
    protocol = (
        _env.get(_env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)
        or _env.get(_env.OTEL_EXPORTER_OTLP_PROTOCOL)
        or "grpc"
    ).lower()
    resolved = _OTLP_BY_PROTOCOL.get(protocol)
    if resolved is None:
        _logger.warning(
            "toolspan: OTLP protocol %r is not supported (use grpc or http/protobuf); no OTLP exporter",
            protocol,
        )
    return resolved


def _named_processor(name: str) -> SpanProcessor | None:
    found = entry_points(group=EXPORTER_ENTRY_POINT_GROUP, name=name)
    entry = next(iter(found), None)
    if entry is None:
        known = sorted({e.name for e in entry_points(group=EXPORTER_ENTRY_POINT_GROUP)})
        _logger.warning("toolspan: unknown trace exporter %r (known: %s); skipped", name, ", ".join(known))
        return None
    try:
        exporter = entry.load()()
    except Exception:
        _logger.warning("toolspan: could not create the %r trace exporter; skipped", name, exc_info=True)
        return None
    if not isinstance(exporter, SpanExporter):
        _logger.warning("toolspan: %r did not give a SpanExporter (%r); skipped", name, exporter)
        return None
    return _batch_processor(exporter)


def _file_processor(path: str) -> SpanProcessor | None:
    try:
        from toolspan.exporters.otlp_file import OtlpJsonFileExporter
    except ImportError:
        _logger.warning("toolspan: the OTLP JSON file exporter is unavailable; file=%r skipped", path)
        return None
    try:
        return _batch_processor(OtlpJsonFileExporter(path))
    except Exception:
        _logger.warning("toolspan: could not create the file exporter for %r; skipped", path, exc_info=True)
        return None


def attach(provider: TracerProvider, parts: list[Part]) -> list[str]:
    """Add each part not attached before; return the labels of those added."""
    done = _attached.setdefault(provider, set())
    added: list[str] = []
    for key, label, make in parts:
        if key in done:
            continue
        try:
            processor = make()
        except Exception:
            _logger.warning("toolspan: could not set up %s; skipped", label, exc_info=True)
            continue
        if processor is None:
            continue
        provider.add_span_processor(processor)
        done.add(key)
        added.append(label)
    return added


def describe(added: list[str]) -> str:
    return "exporters/processors: " + ", ".join(added) if added else "no exporters/processors"
