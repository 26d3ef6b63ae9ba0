"""Carry a tool call to another process or a queue, with the application's propagators (OpenTelemetry's
global one: ``OTEL_PROPAGATORS``, by default W3C ``traceparent``/``tracestate`` and baggage) and the tool
call's ids.

carrier = toolspan.inject({})                      # inside a tool: also the tool's ids
...                                                # in the worker:
with toolspan.plan("subtask", context=toolspan.extract(carrier)):
    ...                                            # child of the tool span, with toolspan.parent.*

The tool call's ids travel as W3C baggage entries (``toolspan.execution_id``, ``toolspan.tool_call_id``):
through the global propagator when it carries baggage, else in a ``baggage`` header holding those two
entries only (the application's own baggage stays out, as its setting says).
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping

from opentelemetry import baggage, propagate
from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.context import Context

from toolspan import semconv
from toolspan._instrument.context import current_tool

_logger = logging.getLogger(__name__)

__all__ = ["extract", "inject"]

_BAGGAGE = W3CBaggagePropagator()
_IDS = (semconv.BAGGAGE_EXECUTION_ID, semconv.BAGGAGE_TOOL_CALL_ID)


def _carries_baggage() -> bool:
    """Whether the global propagator writes W3C baggage itself."""
    return "baggage" in propagate.get_global_textmap().fields


def _ids_only(ctx: Context) -> Context:
    """``ctx``'s baggage reduced to the tool call's ids."""
    kept = Context()
    for key in _IDS:
        value = baggage.get_baggage(key, ctx)
        if value is not None:
            kept = baggage.set_baggage(key, value, kept)
    return kept


Carrier = MutableMapping[str, str]


def inject(carrier: Carrier | None = None, context: Context | None = None) -> Carrier:
    """Write what the global propagator carries of ``context`` (default: the current one; by default
    ``traceparent``, ``tracestate`` and ``baggage``) into ``carrier`` (a new dict when ``None``) and return
    it.

    When the current span is a tool span, the baggage also carries that tool call's
    ``toolspan.execution_id`` and ``toolspan.tool_call_id`` (in a ``baggage`` header of their own when the
    global propagator carries no baggage).
    """
    if carrier is None:
        carrier = {}
    try:
        ctx = context if context is not None else context_api.get_current()
        frame = current_tool(ctx)
        if frame is not None and frame.span is trace_api.get_current_span(ctx):
            ctx = baggage.set_baggage(semconv.BAGGAGE_EXECUTION_ID, frame.execution_id, ctx)
            ctx = baggage.set_baggage(semconv.BAGGAGE_TOOL_CALL_ID, frame.tool_call_id, ctx)
        propagate.inject(carrier, context=ctx)
        if not _carries_baggage():
            _BAGGAGE.inject(carrier, context=_ids_only(ctx))
    except Exception:
        _logger.warning("toolspan: could not inject the trace context", exc_info=True)
    return carrier


def extract(carrier: Carrier) -> Context:
    """The ``Context`` carried by ``carrier`` as the global propagator reads it (remote parent span and
    baggage), with the tool call's ids, for ``context=``."""
    ctx = Context()
    try:
        ctx = propagate.extract(carrier, context=ctx)
        if not _carries_baggage():
            ids = _ids_only(_BAGGAGE.extract(carrier, context=Context()))
            for key in _IDS:
                value = baggage.get_baggage(key, ids)
                if value is not None:
                    ctx = baggage.set_baggage(key, value, ctx)
    except Exception:
        _logger.warning("toolspan: could not extract a trace context", exc_info=True)
    return ctx
