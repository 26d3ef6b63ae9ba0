"""Trace backends read over their own HTTP APIs: Jaeger (query API v1 and v3) and Grafana Tempo.

``Jaeger(url)`` and ``Tempo(url)`` read one trace by id (``trace_spans``: the bridge's neutral spans, or
``None`` when the backend does not hold it) and find runs with the backend's own search (``find``: by
service, tool name and time range; ``Run`` summaries, newest first; Jaeger's ``search``: the spans found,
by trace id):

- Jaeger: a trace from ``/api/v3/traces/{id}`` (OTLP, nanoseconds: the default) or ``/api/traces/{id}``
  (``api="v1"``: microseconds, arrays as JSON text, no link attributes); search with ``/api/traces``
  (``service``, ``tags`` ``{"gen_ai.tool.name": ...}``, ``start``/``end``, ``limit``), for every service
  of ``/api/services`` when none is given (the v3 search takes no attributes).
- Tempo: a trace from ``/api/v2/traces/{id}``; search with TraceQL on ``/api/search``
  (``{ resource.service.name = "..." && span.gen_ai.tool.name = "..." }``, ``start``/``end`` in seconds).

Every failure is a ``BackendError`` with a one-line message naming the URL and what was wrong (an HTTP
status with the start of the backend's answer, an unreachable host, no whole answer within ``timeout_s``,
an answer over ``MAX_RESPONSE_BYTES`` or cut off, JSON nested too deep, a time out of range, a response
the bridge cannot read). Standard library only (``urllib``): ``timeout_s`` bounds each whole answer
(connecting, headers, body, redirects), not each read; at most 5 redirects are followed, to ``http(s)://``
only, and the ``headers`` given go to the backend's origin only (a redirect elsewhere is followed without
them, as curl and requests do). An answer is held once at a time: its bytes, then its text, then its JSON
(parsed by the standard library, a fraction of orjson's peak), then its spans.
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
    run_of,
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
    "run_of",
]
