"""Traces this replica does not hold, read from Tempo (``/api/v2/traces/{id}``) or Jaeger
(``/api/v3/traces/{id}``) with the clients of ``toolspan.backends`` (the ones ``toolspan fetch`` uses)."""

from __future__ import annotations

from toolspan.backends import Backend, BackendError, Jaeger, Tempo
from toolspan.bridge.model import Span

__all__ = ["RemoteError", "fetch_remote"]


class RemoteError(Exception):
    """A backend answered with an error or something the bridge cannot read."""


def fetch_remote(trace_id: str, tempo_url: str | None, jaeger_url: str | None) -> list[Span] | None:
    """The spans of ``trace_id`` from the first backend that has it (Tempo first), or ``None``."""
    backends: list[Backend] = []
    try:
        if tempo_url:
            backends.append(Tempo(tempo_url))
        if jaeger_url:
            backends.append(Jaeger(jaeger_url))
        for backend in backends:
            spans = backend.trace_spans(trace_id)
            if spans:
                return spans
    except (BackendError, ValueError) as e:
        raise RemoteError(str(e)) from None
    return None
