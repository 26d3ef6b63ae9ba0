"""Trace backends read over their own HTTP APIs: Jaeger (query API v1 and v3) and Grafana Tempo.

``Jaeger(url)`` and ``Tempo(url)`` read one trace by id (``trace_spans``: the bridge's neutral spans, or
``None`` when the backend does not hold it) and find runs with the backend's own search (``find``: by
service, tool name and time range; ``Run`` summaries, newest first):

- Jaeger: a trace from ``/api/v3/traces/{id}`` (OTLP, nanoseconds: the default) or ``/api/traces/{id}``
  (``api="v1"``: microseconds, arrays as JSON text, no link attributes); search with ``/api/traces``
  (``service``, ``tags`` ``{"gen_ai.tool.name": ...}``, ``start``/``end``, ``limit``), for every service
  of ``/api/services`` when none is given (the v3 search takes no attributes).
- Tempo: a trace from ``/api/v2/traces/{id}``; search with TraceQL on ``/api/search``
  (``{ resource.service.name = "..." && span.gen_ai.tool.name = "..." }``, ``start``/``end`` in seconds).

Every failure is a ``BackendError`` with a one-line message naming the URL (an HTTP status with the
start of the backend's answer, an unreachable host, a response the bridge cannot read). Standard
library only (``urllib``); a response is read up to ``MAX_RESPONSE_BYTES``.
"""

from __future__ import annotations

from toolspan.backends._client import (
    MAX_RESPONSE_BYTES,
    Backend,
    BackendError,
    Jaeger,
    Run,
    RunQuery,
    Tempo,
    normal_trace_id,
)

__all__ = [
    "MAX_RESPONSE_BYTES",
    "Backend",
    "BackendError",
    "Jaeger",
    "Run",
    "RunQuery",
    "Tempo",
    "normal_trace_id",
]
