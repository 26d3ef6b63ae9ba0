"""The tracer toolspan's spans come from, cached per provider, and the "tracing is off" fast path. Its
instrumentation scope is ``toolspan`` at the package's version, with the schema URL of the semantic
conventions its spans follow (``semconv.SCHEMA_URL``)."""

from __future__ import annotations

import contextlib
import weakref
from importlib import metadata

from opentelemetry import trace as trace_api

from toolspan._util.otel_internals import global_provider
from toolspan.semconv import SCHEMA_URL, SCOPE_NAME

__all__ = ["VERSION", "get_tracer"]

try:
    VERSION = metadata.version("toolspan")
except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
    VERSION = "0.0.0"

# The global provider seen last and its tracer (one slot: the global provider rarely changes).
_global: tuple[trace_api.TracerProvider | None, trace_api.Tracer | None] = (None, None)
_explicit: weakref.WeakKeyDictionary[trace_api.TracerProvider, trace_api.Tracer] = weakref.WeakKeyDictionary()


def get_tracer(provider: trace_api.TracerProvider | None) -> trace_api.Tracer | None:
    """toolspan's tracer from ``provider`` (default: the global one); ``None`` when no provider is
    installed, so callers can call straight through. Re-evaluated on every call, cheaply."""
    global _global
    if provider is None:
        current = global_provider()
        if current is None:
            return None
        cached_provider, cached_tracer = _global
        if current is cached_provider and cached_tracer is not None:
            return cached_tracer
        tracer = current.get_tracer(SCOPE_NAME, VERSION, schema_url=SCHEMA_URL)
        _global = (current, tracer)
        return tracer
    try:
        return _explicit[provider]
    except KeyError:
        tracer = provider.get_tracer(SCOPE_NAME, VERSION, schema_url=SCHEMA_URL)
        with contextlib.suppress(TypeError):  # a provider that cannot be weakly referenced: no caching
            _explicit[provider] = tracer
        return tracer
    except TypeError:
        return provider.get_tracer(SCOPE_NAME, VERSION, schema_url=SCHEMA_URL)
