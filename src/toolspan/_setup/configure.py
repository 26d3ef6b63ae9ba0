"""``toolspan.configure()``: capture settings, and a ``TracerProvider`` only when the application has none.

What it does, in order:

1. Resolves and installs the capture :class:`~toolspan.config.Config` (always, also when the
   application keeps its own provider).
2. If the global provider is still the API's proxy (nobody installed one), creates an SDK
   ``TracerProvider`` with ``Resource.create(...)`` and the exporters asked for, and installs it. The
   service name resolves as: ``service_name`` argument > ``resource_attributes["service.name"]`` >
   ``OTEL_SERVICE_NAME`` > ``service.name`` in ``OTEL_RESOURCE_ATTRIBUTES`` > ``TOOLSPAN_SERVICE_NAME`` >
   the SDK's ``unknown_service:<executable>``. Other ``resource_attributes`` override
   ``OTEL_RESOURCE_ATTRIBUTES`` key by key.
3. If an SDK provider is installed, keeps it (never replaced; its resource is not changed) and adds only
   what the call explicitly asks for (``exporters``, ``console``, ``file``, ``span_processors``); exporters
   the environment selects are left to whoever set that provider up.
4. When ``exporters`` is None and no ``LoggerProvider`` is installed, installs one with the exporters
   ``OTEL_LOGS_EXPORTER`` selects (``toolspan._setup.logs``): ``toolspan.text_delta`` chunks go out as
   OTLP log records.
5. With ``instrument_threading`` (default), calls ``instrument_threads``: OpenTelemetry's
   ``ThreadingInstrumentor`` (a core dependency) is turned on once, so ``ThreadPoolExecutor``,
   ``threading.Thread`` and ``loop.run_in_executor`` keep the calling span as parent. An application that
   sets OpenTelemetry up itself calls ``configure()`` too (its provider is kept), or turns the
   instrumentation on itself (``ThreadingInstrumentor().instrument()``; ``opentelemetry-instrument`` does).

Exporters when ``exporters`` is None come from ``OTEL_TRACES_EXPORTER`` (comma list, ``none`` for none;
names are ``opentelemetry_traces_exporter`` entry points: ``otlp``, ``otlp_proto_grpc``,
``otlp_proto_http``, ``console``, ``toolspan_timeline``, ``toolspan_otlp_file``, ...). ``otlp`` follows
``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` / ``OTEL_EXPORTER_OTLP_PROTOCOL`` (``grpc`` default, or
``http/protobuf``). Unset, it means ``otlp`` when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set, otherwise no exporter. Endpoint, headers and timeout are
read by the OTLP exporters. Every exporter runs behind a ``BatchSpanProcessor``, whose queue is capped
(``OTEL_BSP_MAX_QUEUE_SIZE``, 2048 spans by default; spans beyond it are dropped, never buffered without
bound). Unknown names are logged and skipped. Calling ``configure()`` again with the same arguments adds
nothing twice.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import trace as trace_api
from opentelemetry.sdk.resources import OTELResourceDetector, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.util.types import AttributeValue

from toolspan._decisions.chain import GUARD, install_guard
from toolspan._setup.exporting import EXPORTER_ENTRY_POINT_GROUP, attach, describe, env_parts, explicit_parts
from toolspan._setup.logs import configure_logs
from toolspan._util import env as _env
from toolspan.config import Redactor, resolve_config, set_config
from toolspan.semconv import SERVICE_NAME

__all__ = ["EXPORTER_ENTRY_POINT_GROUP", "configure", "instrument_threads"]

if TYPE_CHECKING:
    from toolspan._decisions.guard import PolicyGuard
    from toolspan.policy import Policy

_logger = logging.getLogger(__name__)

# The SDK's BatchSpanProcessor defaults (what the OpenTelemetry specification gives).

_lock = threading.RLock()
# What configure() attached to each provider (exporter names, file paths, exporter/processor objects).
_threading_warned = False


def configure(
    *,
    service_name: str | None = None,
    exporters: Sequence[str | SpanExporter] | None = None,
    console: bool = False,
    file: str | os.PathLike[str] | None = None,
    span_processors: Iterable[SpanProcessor] = (),
    capture_content: bool | None = None,
    max_attribute_bytes: int | None = None,
    redact_keys: Iterable[str] | None = None,
    redact: Redactor | None = None,
    conventions: str | Iterable[str] | None = None,
    instrument_threading: bool = True,
    resource_attributes: Mapping[str, AttributeValue] | None = None,
    policy: str | os.PathLike[str] | Policy | None = None,
) -> trace_api.TracerProvider:
    """Set up toolspan (see the module docstring) and return the tracer provider in use.

    ``policy`` (a file or a ``toolspan.policy.Policy``; else ``TOOLSPAN_POLICY``): every tool call is checked
    against it before its body runs (``toolspan._decisions.guard``). A policy that cannot be loaded raises
    ``toolspan.policy.PolicyError``, from the argument or the variable alike: a policy is never skipped.
    Called without a policy (and no ``TOOLSPAN_POLICY``), it removes the one an earlier call installed.

    Raises ``TypeError``/``ValueError`` for bad arguments; problems with exporters or the environment
    are logged and skipped.
    """
    guard = _policy_guard(policy)
    config = resolve_config(
        capture_content=capture_content,
        max_attribute_bytes=max_attribute_bytes,
        redact_keys=redact_keys,
        redact=redact,
        conventions=conventions,
    )
    processors = list(span_processors)
    _check_arguments(
        service_name=service_name,
        exporters=exporters,
        console=console,
        file=file,
        processors=processors,
        instrument_threading=instrument_threading,
        resource_attributes=resource_attributes,
    )
    set_config(config)

    with _lock:
        provider = _configure_provider(
            service_name=service_name,
            exporters=exporters,
            console=console,
            file=file,
            processors=processors,
            resource_attributes=resource_attributes,
        )
    if exporters is None:  # the environment decides, for log records (text deltas) as for spans
        configure_logs(getattr(provider, "resource", None))
    if instrument_threading:
        instrument_threads()
    _install_policy(guard, provider)
    return provider


def _install_policy(guard: PolicyGuard | None, provider: trace_api.TracerProvider) -> None:
    """The policy is part of the configuration: ``configure()`` without one (and no ``TOOLSPAN_POLICY``)
    removes an earlier one, as it resets every other setting. The provider tells the guard when runs end."""
    install_guard(guard)
    if guard is not None and isinstance(provider, TracerProvider):
        with _lock:
            if provider not in _run_ends:  # once per provider: it tells whichever guard is installed
                _run_ends.add(provider)
                provider.add_span_processor(_RunEnds())


class _RunEnds(SpanProcessor):
    """Tells the policy guard when a run ends here: a root span (no parent: the trace began in this process)
    ended, so the guard drops that run's record (budgets and order) instead of holding it."""

    def on_end(self, span: Any) -> None:
        if span.parent is None and span.context is not None:
            guard = GUARD[0]
            ended = getattr(guard, "run_ended", None)
            if ended is not None:
                ended(span.context.trace_id)


_run_ends: weakref.WeakSet[TracerProvider] = weakref.WeakSet()


def _policy_guard(policy: str | os.PathLike[str] | Policy | None) -> PolicyGuard | None:
    from toolspan._decisions.guard import PolicyGuard
    from toolspan.policy import Policy, load_policy

    if policy is None:
        policy = _env.get(_env.TOOLSPAN_POLICY)
        if policy is None:
            return None
    if not isinstance(policy, Policy):
        if not isinstance(policy, str | os.PathLike):
            raise TypeError(f"policy must be a file path or a toolspan.policy.Policy, not {policy!r:.80}")
        policy = load_policy(policy)
    return PolicyGuard(policy)


def _check_arguments(
    *,
    service_name: object,
    exporters: object,
    console: object,
    file: object,
    processors: list[Any],
    instrument_threading: object,
    resource_attributes: object,
) -> None:
    if service_name is not None and not isinstance(service_name, str):
        raise TypeError(f"service_name must be a str, got {type(service_name).__name__}")
    if exporters is not None:
        if isinstance(exporters, (str, bytes)) or not isinstance(exporters, Sequence):
            raise TypeError("exporters must be a list of exporter names or SpanExporter instances")
        for item in exporters:
            if not isinstance(item, (str, SpanExporter)):
                raise TypeError(f"exporters items must be names or SpanExporter instances, got {item!r}")
    if not isinstance(console, bool):
        raise TypeError(f"console must be a bool, got {type(console).__name__}")
    if file is not None and not isinstance(file, (str, os.PathLike)):
        raise TypeError(f"file must be a path, got {type(file).__name__}")
    for processor in processors:
        if not isinstance(processor, SpanProcessor):
            raise TypeError(f"span_processors items must be SpanProcessor instances, got {processor!r}")
    if not isinstance(instrument_threading, bool):
        raise TypeError(f"instrument_threading must be a bool, got {type(instrument_threading).__name__}")
    if resource_attributes is not None and not isinstance(resource_attributes, Mapping):
        raise TypeError("resource_attributes must be a mapping of attribute names to values")


def _configure_provider(
    *,
    service_name: str | None,
    exporters: Sequence[str | SpanExporter] | None,
    console: bool,
    file: str | os.PathLike[str] | None,
    processors: list[SpanProcessor],
    resource_attributes: Mapping[str, AttributeValue] | None,
) -> trace_api.TracerProvider:
    explicit = explicit_parts(exporters, console, file, processors)
    current = trace_api.get_tracer_provider()
    if isinstance(current, trace_api.ProxyTracerProvider):
        parts = explicit if exporters is not None else env_parts() + explicit
        provider = TracerProvider(resource=_resource(service_name, resource_attributes))
        added = attach(provider, parts)
        trace_api.set_tracer_provider(provider)
        installed = trace_api.get_tracer_provider()
        if installed is provider:
            _logger.info(
                "toolspan: installed a TracerProvider (service.name=%r) with %s",
                provider.resource.attributes.get(SERVICE_NAME),
                describe(added),
            )
            return provider
        # Another thread installed one in between: use it, as if it had been there before.
        provider.shutdown()
        current = installed
    if isinstance(current, TracerProvider):
        added = attach(current, explicit)
        _logger.info(
            "toolspan: kept the installed TracerProvider%s; added %s",
            " (service_name/resource_attributes not applied to it)"
            if service_name is not None or resource_attributes
            else "",
            describe(added),
        )
    elif explicit:
        _logger.warning(
            "toolspan: the installed tracer provider (%s) is not an SDK TracerProvider; "
            "cannot add the requested exporters/processors",
            type(current).__name__,
        )
    else:
        _logger.info("toolspan: kept the installed tracer provider (%s)", type(current).__name__)
    return current


def _resource(service_name: str | None, resource_attributes: Mapping[str, AttributeValue] | None) -> Resource:
    attributes: dict[str, AttributeValue] = dict(resource_attributes or {})
    if service_name:
        attributes[SERVICE_NAME] = service_name
    elif SERVICE_NAME not in attributes:
        try:
            from_env = (
                OTELResourceDetector().detect().attributes
            )  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
        except Exception:
            from_env = {}
        fallback = _env.get(_env.TOOLSPAN_SERVICE_NAME)
        if SERVICE_NAME not in from_env and fallback:
            attributes[SERVICE_NAME] = fallback
    return Resource.create(attributes)


def instrument_threads() -> bool:
    """Keep the calling span as parent in ``Thread``, ``ThreadPoolExecutor`` and ``run_in_executor``.

    Turns on OpenTelemetry's ``ThreadingInstrumentor`` unless it is already on (by an earlier call,
    ``configure()``, ``opentelemetry-instrument`` or the application). Idempotent and thread-safe; never
    raises: returns whether the instrumentation is on afterwards, and logs why when it could not be.
    """
    global _threading_warned
    with _lock:
        try:
            from opentelemetry.instrumentation.threading import ThreadingInstrumentor
        except ImportError:  # a broken install: the package is a core dependency
            if not _threading_warned:
                _threading_warned = True
                _logger.warning(
                    "toolspan: opentelemetry-instrumentation-threading cannot be imported, so tools run in "
                    "threads start new traces; reinstall toolspan"
                )
            return False
        try:
            instrumentor = ThreadingInstrumentor()
            if not instrumentor.is_instrumented_by_opentelemetry:
                instrumentor.instrument()
            return bool(instrumentor.is_instrumented_by_opentelemetry)
        except Exception:
            _logger.warning("toolspan: could not enable the threading instrumentation", exc_info=True)
            return False
