"""Carry a tool call to another process or a queue: W3C ``traceparent``/``tracestate`` and baggage.

carrier = toolspan.inject({})                      # inside a tool: also the tool's ids
...                                                # in the worker:
with toolspan.plan("subtask", context=toolspan.extract(carrier)):
    ...                                            # child of the tool span, with toolspan.parent.*
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping

from opentelemetry import baggage
from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.context import Context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from toolspan import semconv
from toolspan._instrument.context import current_tool

_logger = logging.getLogger(__name__)

__all__ = ["extract", "inject"]

_TRACE_CONTEXT = TraceContextTextMapPropagator()
_BAGGAGE = W3CBaggagePropagator()

Carrier = MutableMapping[str, str]


def inject(carrier: Carrier | None = None, context: Context | None = None) -> Carrier:
    """Write ``traceparent``, ``tracestate`` and ``baggage`` of ``context`` (default: the current one)
    into ``carrier`` (a new dict when ``None``) and return it.

    When the current span is a tool span, the baggage also carries that tool call's
    ``toolspan.execution_id`` and ``toolspan.tool_call_id``.
    """
    if carrier is None:
        carrier = {}
    try:
        ctx = context if context is not None else context_api.get_current()
        frame = current_tool(ctx)
        if frame is not None and frame.span is trace_api.get_current_span(ctx):
            ctx = baggage.set_baggage(semconv.BAGGAGE_EXECUTION_ID, frame.execution_id, ctx)
            ctx = baggage.set_baggage(semconv.BAGGAGE_TOOL_CALL_ID, frame.tool_call_id, ctx)
        _TRACE_CONTEXT.inject(carrier, context=ctx)
        _BAGGAGE.inject(carrier, context=ctx)
    except Exception:
        _logger.warning("toolspan: could not inject the trace context", exc_info=True)
    return carrier


def extract(carrier: Carrier) -> Context:
    """The ``Context`` carried by ``carrier`` (remote parent span and baggage), for ``context=``."""
    ctx = Context()
    try:
        ctx = _TRACE_CONTEXT.extract(carrier, context=ctx)
        ctx = _BAGGAGE.extract(carrier, context=ctx)
    except Exception:
        _logger.warning("toolspan: could not extract a trace context", exc_info=True)
    return ctx
