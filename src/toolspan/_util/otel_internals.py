"""Every place toolspan relies on a private detail of OpenTelemetry (or of CPython's ``json``) for speed.

Each trick is checked once, at import, against the public behaviour it stands in for. When an
upgrade breaks an assumption, the public (slower) way is used instead and a debug message says so;
nothing else in toolspan reads these private names. ``tests/util/test_otel_internals.py`` checks each
assumption on the installed versions and runs each fallback with the assumption broken.

- The global provider slot, ``opentelemetry.trace._TRACER_PROVIDER``: ``None`` until an application
  calls ``set_tracer_provider``. Read on every tool call to tell "tracing off" in one attribute load
  (``global_provider``, ``tracing_on``). Fallback: ``get_tracer_provider()``, ``None`` for the proxy.
- The context key the API keeps the current span under (``opentelemetry.trace.propagation``'s
  private key): one ``Context`` built per tool call instead of two (``context_with``). Fallback:
  ``set_span_in_context`` then ``context.set_value``.
- Where an SDK span keeps its attributes (``_Span._attributes``: a ``BoundedAttributes`` whose
  ``_dict`` holds them, guarded by the span's ``_lock``, ``_end_time`` set once ended): the end
  attributes of a tool span, strings and numbers toolspan made itself, are added with one
  ``dict.update`` instead of validating each value again (``set_attributes``). Only while no length
  limit applies and the count limit leaves room; checked on the first span written. Fallback:
  ``span.set_attributes``.
- The end time of an SDK span (``ReadableSpan.end_time``, not part of the API's ``Span``):
  ``span_ended``. Fallback: "not ended" for a span without it.
- The C JSON encoder, ``json.encoder.c_make_encoder``: built once and called directly, where
  ``JSONEncoder.encode`` builds one per call (``json_encoder``). Fallback: ``JSONEncoder(...).encode``.
- The environment's ``OTEL_PYTHON_TRACER_PROVIDER``, read from ``os.environ._data`` (the public ``in``
  costs a microsecond per tool call while tracing is off): with it set, the first tool call loads the
  provider it names (``get_tracer_provider``), so tools are traced from that call on. Fallback: ``in
  os.environ``.
- The API's set-once guard and proxy (``_TRACER_PROVIDER_SET_ONCE``, ``_PROXY_TRACER_PROVIDER``),
  reset by ``toolspan.testing`` to install a fresh provider per test (``swap_global_provider``).
  Fallback: ``set_tracer_provider``, which works once per process.
- Whether the SDK will record a span (``Tracer.sampler`` is the SDK's ``ALWAYS_ON`` or its default
  ``ParentBased(ALWAYS_ON)``, whose delegates are ``ALWAYS_ON``; ``Tracer._tracer_config.is_enabled``):
  then a tool's start attributes, its arguments included, are built as a plain dict before
  ``start_span`` (``sure_to_record``). Fallback: "not known", and the arguments are serialized only
  when the SDK reads them.
- The classes of SDK tracers and spans (``Tracer``, ``_Span``, which ``TracerProvider.get_tracer`` and
  ``Tracer.start_span`` make): ``toolspan.testing`` injects a test clock into one provider by giving
  its tracers and spans subclasses that read the clock where the SDK would read ``time_ns()``
  (``clocked_provider``). Checked when a clocked provider is made; a test helper, not a shortcut.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any, Final

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.environment_variables import OTEL_PYTHON_TRACER_PROVIDER

from toolspan._util import env as _env

__all__ = [
    "CONTEXT_KEY_OK",
    "PROVIDER_SLOT_OK",
    "SWAP_OK",
    "clocked_provider",
    "context_with",
    "global_provider",
    "json_encoder",
    "restore_global_provider",
    "set_attributes",
    "span_ended",
    "swap_global_provider",
    "sure_to_record",
    "tracing_on",
]

_logger = logging.getLogger(__name__)

_MISSING: Final = object()


# TOOLSPAN_OTEL_SHORTCUTS=off: every check below answers "broken", so the public fallbacks run (the test
# suite runs the core tests once this way). The test helpers' provider swap is not a shortcut of the
# instrumentation and stays as it is.
SHORTCUTS: Final = (_env.get(_env.TOOLSPAN_OTEL_SHORTCUTS) or "on").strip().lower() not in (
    "off",
    "0",
    "false",
)


def _broken(what: str) -> bool:
    _logger.debug("toolspan: %s changed in this OpenTelemetry version; using the public API", what)
    return False


# --- the global provider slot ----------------------------------------------------------------------


def check_provider_slot() -> bool:
    """The slot exists and is ``None`` (no provider yet) or what ``get_tracer_provider`` returns.

    (``get_tracer_provider`` is not called while the slot is empty: with ``OTEL_PYTHON_TRACER_PROVIDER``
    set it would load and install a provider, which an import must not do.)"""
    if not SHORTCUTS:
        return _broken("shortcuts off")
    slot = getattr(trace_api, "_TRACER_PROVIDER", _MISSING)
    if slot is _MISSING:
        return _broken("opentelemetry.trace._TRACER_PROVIDER")
    if slot is None or slot is trace_api.get_tracer_provider():
        return True
    return _broken("opentelemetry.trace._TRACER_PROVIDER (not the global provider)")


def _environ_has(name: str) -> Callable[[], bool]:
    """``name in os.environ``, read from the mapping's own dict (``os.environ._data``, keyed by
    ``os.environ.encodekey``): the public ``in`` costs a microsecond, too much for every tool call while
    tracing is off. Checked against the public answer; falls back to it."""
    data = getattr(os.environ, "_data", None)
    encodekey = getattr(os.environ, "encodekey", None)
    if SHORTCUTS and isinstance(data, dict) and callable(encodekey):
        try:
            key = encodekey(name)
            probe = encodekey("PATH")
            if (key in data) == (name in os.environ) and (probe in data) == ("PATH" in os.environ):
                return lambda: key in data
        except Exception:
            pass
    _broken("os.environ._data")
    return lambda: name in os.environ


# Whether the environment names a tracer provider for the API to load on first use (then the slot stays
# empty until something calls get_tracer_provider(): toolspan does, on a tool's first call).
_provider_in_environment: Final = _environ_has(OTEL_PYTHON_TRACER_PROVIDER)


def _slot_provider() -> trace_api.TracerProvider | None:
    provider = trace_api._TRACER_PROVIDER
    if provider is None and _provider_in_environment():
        return _public_provider()  # loads and installs the provider the environment names
    return provider


def _public_provider() -> trace_api.TracerProvider | None:
    provider = trace_api.get_tracer_provider()
    return None if isinstance(provider, trace_api.ProxyTracerProvider) else provider


def _slot_tracing_on() -> bool:
    if trace_api._TRACER_PROVIDER is not None:
        return True
    return _provider_in_environment() and _public_tracing_on()


def _public_tracing_on() -> bool:
    return not isinstance(trace_api.get_tracer_provider(), trace_api.ProxyTracerProvider)


def provider_functions(
    ok: bool,
) -> tuple[Callable[[], trace_api.TracerProvider | None], Callable[[], bool]]:
    """``(global_provider, tracing_on)``: the slot readers when ``ok``, else the public ones."""
    return (_slot_provider, _slot_tracing_on) if ok else (_public_provider, _public_tracing_on)


PROVIDER_SLOT_OK: Final = check_provider_slot()
global_provider, tracing_on = provider_functions(PROVIDER_SLOT_OK)
"""``global_provider()``: the application's global tracer provider, ``None`` while none is set.
``tracing_on()``: whether one is set (the switch of a tool on the global provider)."""


# --- the current-span context key ------------------------------------------------------------------


def span_key() -> Any:
    """The key ``set_span_in_context`` stores a span under, or ``None`` when it cannot be found."""
    try:
        keys = list(trace_api.set_span_in_context(trace_api.INVALID_SPAN, Context()))
    except Exception:
        return None
    return keys[0] if len(keys) == 1 else None


def check_context_key(key: Any) -> bool:
    """A ``Context`` built by hand with ``key`` is read back as the current span, and contexts are dicts."""
    if key is None or not SHORTCUTS:
        return _broken("the current-span context key")
    probe = trace_api.NonRecordingSpan(trace_api.SpanContext(1, 1, is_remote=False))
    try:
        ok = isinstance(Context(), dict) and trace_api.get_current_span(Context({key: probe})) is probe
    except Exception:
        ok = False
    return ok or _broken("the current-span context key")


def context_function(key: Any, ok: bool) -> Callable[[Context, trace_api.Span, str, object], Context]:
    """``context_with(parent, span, key, value)``: ``parent`` with ``span`` current and ``key`` set."""
    if not ok:

        def context_with_public(parent: Context, span: trace_api.Span, extra: str, value: object) -> Context:
            return context_api.set_value(extra, value, trace_api.set_span_in_context(span, parent))

        return context_with_public

    def context_with(parent: Context, span: trace_api.Span, extra: str, value: object) -> Context:
        values = dict(parent)
        values[key] = span
        values[extra] = value
        return Context(values)

    return context_with


_SPAN_KEY: Final = span_key()
CONTEXT_KEY_OK: Final = check_context_key(_SPAN_KEY)
context_with = context_function(_SPAN_KEY, CONTEXT_KEY_OK)


# --- will the SDK record this span? -----------------------------------------------------------------


def _records_unknown(tracer: Any, parent: Context) -> bool:
    return False


def sampler_check() -> Callable[[Any, Context], bool]:
    """``sure_to_record(tracer, parent)``: ``True`` only when an SDK tracer will certainly record the span
    it starts under ``parent``: the tracer is enabled and its sampler is the SDK's ``ALWAYS_ON``, or its
    default ``ParentBased(ALWAYS_ON)`` with a parent that is sampled or no parent. ``False`` means "not
    known" (any other sampler, any other tracer), never "dropped". Checked against the SDK on first use."""
    if not SHORTCUTS:
        _broken("shortcuts off")
        return _records_unknown
    try:
        from opentelemetry.sdk.trace import TracerProvider, sampling
    except ImportError:
        _broken("opentelemetry.sdk.trace.sampling")
        return _records_unknown
    always_on: Any = sampling.ALWAYS_ON
    parent_based: Any = sampling.DEFAULT_ON
    key = _SPAN_KEY
    try:
        ok = CONTEXT_KEY_OK and all(
            getattr(parent_based, name, None) is always_on
            for name in ("_root", "_remote_parent_sampled", "_local_parent_sampled")
        )
        probe: Any = TracerProvider(sampler=parent_based).get_tracer("toolspan.probe")
        ok = ok and probe.sampler is parent_based and probe._tracer_config.is_enabled is True
    except Exception:
        ok = False
    if not ok:
        _broken("the SDK's default samplers")
        return _records_unknown

    def sure_to_record(tracer: Any, parent: Context) -> bool:
        try:
            sampler = tracer.sampler
            if sampler is parent_based:
                span: Any = parent.get(key)
                if span is not None:
                    span_context = span.get_span_context()
                    if span_context.is_valid and not span_context.trace_flags.sampled:
                        return False
            elif sampler is not always_on:
                return False
            return tracer._tracer_config.is_enabled is True
        except Exception:
            return False

    return sure_to_record


def _sure_to_record_first(tracer: Any, parent: Context) -> bool:
    global sure_to_record
    sure_to_record = sampler_check()
    return sure_to_record(tracer, parent)


sure_to_record: Callable[[Any, Context], bool] = _sure_to_record_first
"""``sure_to_record(tracer, parent)``: whether the span ``tracer`` starts under ``parent`` will certainly be
recorded (so its start attributes may be built before ``start_span``); ``False`` when not known."""


# --- writing the attributes of an SDK span --------------------------------------------------------


def _set_attributes_public(span: Any, attributes: dict[str, Any]) -> None:
    span.set_attributes(attributes)


def direct_writer(bounded: Any) -> Callable[[Any, dict[str, Any]], None]:
    """A writer that adds already-valid attributes straight into an SDK span's attribute dict."""

    def set_attributes_direct(span: Any, attributes: dict[str, Any]) -> None:
        try:
            store: Any = span._attributes
            if type(store) is bounded and store.max_value_len is None:
                with span._lock, store._lock:
                    if span._end_time is None:
                        values = store._dict
                        limit = store.maxlen
                        if limit is None or len(values) + len(attributes) <= limit:
                            values.update(attributes)
                            return
        except AttributeError:
            pass
        span.set_attributes(attributes)  # another kind of span, a limit, or an ended span

    return set_attributes_direct


def check_attribute_store() -> Callable[[Any, dict[str, Any]], None] | None:
    """The direct writer when a probe SDK span, written both ways, ends up with the same attributes."""
    if not SHORTCUTS:
        _broken("shortcuts off")
        return None
    try:
        from opentelemetry.attributes import BoundedAttributes
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError:
        _broken("opentelemetry.sdk.trace")
        return None
    writer = direct_writer(BoundedAttributes)
    try:
        tracer: Any = TracerProvider().get_tracer("toolspan.probe")
        # Explicit times: the probe reads no clock (a test's fake clock sees the same ticks either way).
        direct = tracer.start_span("probe", attributes={"a": 1}, start_time=1)
        public = tracer.start_span("probe", attributes={"a": 1}, start_time=1)
        values: dict[str, Any] = {"b": "x", "c": 2, "d": True}
        writer(direct, values)
        public.set_attributes(values)
        store = getattr(direct, "_attributes", None)
        ok = (
            type(store) is BoundedAttributes
            and isinstance(getattr(store, "_dict", None), dict)
            and dict(direct.attributes or {}) == dict(public.attributes or {}) == {"a": 1, **values}
        )
        direct.end(end_time=2)
        public.end(end_time=2)
        ok = ok and direct.attributes.get("b") == "x" and not direct.is_recording()
    except Exception:
        ok = False
    if not ok:
        _broken("the attribute store of SDK spans")
        return None
    return writer


def _set_attributes_first(span: Any, attributes: dict[str, Any]) -> None:
    global set_attributes
    set_attributes = check_attribute_store() or _set_attributes_public
    set_attributes(span, attributes)


set_attributes: Callable[[Any, dict[str, Any]], None] = _set_attributes_first
"""``set_attributes(span, attributes)``: add attributes toolspan built (str, int, float, bool values)
to ``span``; the SDK's own method for anything but a running SDK span without length limits. Checked
(importing the SDK) on first use, not at ``import toolspan``."""


# --- SDK span end time -----------------------------------------------------------------------------


def span_ended(span: object) -> bool:
    """Whether ``span`` has ended: an SDK span's ``end_time`` is set; other spans count as running."""
    try:
        return getattr(span, "end_time", None) is not None
    except Exception:
        return False


# --- the C JSON encoder ----------------------------------------------------------------------------


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_SAMPLE: Final = {"a": [1, 2.5, None, True, 'é\n"\u2028', {"b": -3}], "1": "x", "": []}


def json_encoder(*, key_separator: str = ": ", item_separator: str = ", ") -> Callable[[Any], str]:
    """``JSONEncoder(ensure_ascii=False, allow_nan=False, separators=...).encode``, calling the C
    encoder directly (built once; ``encode`` builds it on every call). Without cycle checks: a cycle
    ends in ``RecursionError``. The stdlib encoder when the C one is missing or answers differently."""
    stdlib = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(item_separator, key_separator))
    fallback = stdlib.encode
    if not SHORTCUTS:
        return fallback
    make = getattr(json.encoder, "c_make_encoder", None)
    quote = getattr(json.encoder, "c_encode_basestring", None)
    if make is None or quote is None:
        _broken("json.encoder.c_make_encoder")
        return fallback
    try:
        # (markers, default, encoder, indent, key_separator, item_separator, sort_keys, skipkeys, allow_nan)
        chunks = make(None, _not_json, quote, None, key_separator, item_separator, False, False, False)
        join = "".join

        def encode(value: Any) -> str:
            if type(value) is str:
                return quote(value)  # type: ignore[no-any-return]
            return join(chunks(value, 0))

        # Checked against the pure-Python encoder (``iterencode`` without one-shot does not use the C one).
        if encode(_SAMPLE) != "".join(stdlib.iterencode(_SAMPLE)) or encode("é") != fallback("é"):
            _broken("json.encoder.c_make_encoder (different output)")
            return fallback
    except Exception:
        _broken("json.encoder.c_make_encoder (failed)")
        return fallback
    return encode


# --- swapping the global provider (toolspan.testing) -------------------------------------------------

_SWAP_NAMES: Final = ("_TRACER_PROVIDER_SET_ONCE", "_TRACER_PROVIDER", "_PROXY_TRACER_PROVIDER")


def check_swap() -> bool:
    """The API keeps its set-once guard, provider and proxy in the three module globals."""
    try:
        from opentelemetry.util._once import Once
    except ImportError:
        return _broken("opentelemetry.util._once")
    if not all(hasattr(trace_api, name) for name in _SWAP_NAMES):
        return _broken("the global provider's set-once guard")
    return isinstance(trace_api._TRACER_PROVIDER_SET_ONCE, Once) or _broken("the set-once guard's type")


SWAP_OK: Final = check_swap()


def swap_global_provider(provider: trace_api.TracerProvider, *, ok: bool = SWAP_OK) -> tuple[Any, ...] | None:
    """Make ``provider`` the global one, even if one was set before; returns what to restore.

    Without the private globals (``ok`` false) this is ``set_tracer_provider``: it works once per
    process (later calls are refused with OpenTelemetry's warning) and nothing is restored."""
    if not ok:
        trace_api.set_tracer_provider(provider)
        return None
    from opentelemetry.util._once import Once

    saved = tuple(getattr(trace_api, name) for name in _SWAP_NAMES)
    trace_api._TRACER_PROVIDER_SET_ONCE = Once()
    trace_api._TRACER_PROVIDER = None
    trace_api._PROXY_TRACER_PROVIDER = trace_api.ProxyTracerProvider()
    trace_api.set_tracer_provider(provider)
    return saved


def restore_global_provider(saved: tuple[Any, ...] | None) -> None:
    """Undo ``swap_global_provider`` (nothing to do after its fallback)."""
    if saved is None:
        return
    for name, value in zip(_SWAP_NAMES, saved, strict=True):
        setattr(trace_api, name, value)


# --- a clock injected into one provider (test helpers) --------------------------------------------


def clocked_provider(clock: Callable[[], int], **kwargs: Any) -> Any:
    """An SDK ``TracerProvider`` (made with ``kwargs``) whose spans read ``clock`` for their start, end and
    event times wherever none is given. The clock is injected into this provider's tracers and spans
    (subclasses of the SDK's, given to them as the SDK makes them), not patched into the SDK: other
    providers and threads keep the real time. ``RuntimeError`` when the SDK's classes changed."""
    from opentelemetry.sdk import trace as sdk_trace

    sdk_span: Any = getattr(sdk_trace, "_Span", None)
    sdk_tracer: Any = sdk_trace.Tracer
    if not isinstance(sdk_span, type) or "__slots__" in vars(sdk_span):
        raise RuntimeError("toolspan.testing: this OpenTelemetry SDK's spans cannot take an injected clock")

    class ClockedSpan(sdk_span):  # type: ignore[misc]
        def end(self, end_time: int | None = None) -> None:
            super().end(clock() if end_time is None else end_time)

        def add_event(self, name: str, attributes: Any = None, timestamp: int | None = None) -> None:
            super().add_event(name, attributes, clock() if timestamp is None else timestamp)

    class ClockedTracer(sdk_tracer):  # type: ignore[misc]
        def start_span(  # noqa: PLR0917 - the SDK's signature
            self,
            name: str,
            context: Context | None = None,
            kind: trace_api.SpanKind = trace_api.SpanKind.INTERNAL,
            attributes: Any = None,
            links: Any = (),
            start_time: int | None = None,
            record_exception: bool = True,
            set_status_on_exception: bool = True,
        ) -> trace_api.Span:
            span = super().start_span(
                name,
                context,
                kind,
                attributes,
                links,
                clock() if start_time is None else start_time,
                record_exception,
                set_status_on_exception,
            )
            if type(span) is sdk_span:
                span.__class__ = ClockedSpan
            return span  # type: ignore[no-any-return]

    class ClockedTracerProvider(sdk_trace.TracerProvider):
        def get_tracer(self, *args: Any, **options: Any) -> trace_api.Tracer:
            tracer = super().get_tracer(*args, **options)
            if type(tracer) is sdk_tracer:
                tracer.__class__ = ClockedTracer
            return tracer

    return ClockedTracerProvider(**kwargs)
