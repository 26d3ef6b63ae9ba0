"""Deterministic test helpers: sequential ids, a fake clock, and span capture without global leaks.

    from toolspan.testing import capture_spans

    with capture_spans() as spans:          # a real SDK provider + InMemorySpanExporter
        my_tool(1, 2)
    assert spans()[0].name == "execute_tool my_tool"

``capture_spans`` installs its provider as the global one for the duration of the block and puts the
previous global state back afterwards, so tests never leak a provider into each other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace as trace_api
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

from toolspan._util.otel_internals import clocked_provider, restore_global_provider, swap_global_provider

__all__ = [
    "CapturedSpans",
    "FakeClock",
    "SequentialIdGenerator",
    "capture_spans",
    "clocked_tracer_provider",
    "installed_tracer_provider",
    "replay_fixture",
]


class SequentialIdGenerator(IdGenerator):
    """Span ids 1, 2, 3... and trace ids 1, 2, 3... (as integers), thread-safe."""

    def __init__(self, first_span_id: int = 1, first_trace_id: int = 1) -> None:
        self._lock = threading.Lock()
        self._span = first_span_id
        self._trace = first_trace_id

    def generate_span_id(self) -> int:
        with self._lock:
            value = self._span
            self._span += 1
        return value

    def generate_trace_id(self) -> int:
        with self._lock:
            value = self._trace
            self._trace += 1
        return value


class FakeClock:
    """A clock that advances by ``step_ns`` on every reading (thread-safe). Give it to
    ``capture_spans(clock=...)`` or ``clocked_tracer_provider``: the spans of that provider take their
    start, end and event times from it."""

    def __init__(self, start_ns: int = 1_700_000_000_000_000_000, step_ns: int = 1_000_000) -> None:
        self._lock = threading.Lock()
        self._now = start_ns
        self.step_ns = step_ns

    def __call__(self) -> int:
        with self._lock:
            value = self._now
            self._now += self.step_ns
        return value


def clocked_tracer_provider(clock: Callable[[], int], **kwargs: Any) -> TracerProvider:
    """An SDK ``TracerProvider`` (``kwargs`` as for ``TracerProvider``) whose spans read ``clock`` (a
    ``FakeClock``, or any function returning nanoseconds) for their start, end and event times when none
    is given. The clock is injected into this provider only: other providers keep the real time."""
    provider: TracerProvider = clocked_provider(clock, **kwargs)
    return provider


@contextmanager
def installed_tracer_provider(provider: trace_api.TracerProvider) -> Iterator[trace_api.TracerProvider]:
    """Make ``provider`` the global tracer provider inside the block, restoring the old state after.

    OpenTelemetry allows setting the global provider only once per process; tests need a fresh one
    each time. This swaps the API's globals directly (as OpenTelemetry's own test utilities do).
    """
    saved = swap_global_provider(provider)
    try:
        yield provider
    finally:
        restore_global_provider(saved)


class CapturedSpans:
    """What ``capture_spans`` yields: call it (or read ``spans``) for the finished spans so far, in end
    order; ``provider`` is the SDK ``TracerProvider`` they come from, ``exporter`` its in-memory exporter,
    ``clock`` the clock its spans read (a ``FakeClock`` for a deterministic capture; else ``None``)."""

    __slots__ = ("clock", "exporter", "provider")

    def __init__(
        self, provider: TracerProvider, exporter: InMemorySpanExporter, clock: Callable[[], int] | None
    ) -> None:
        self.provider = provider
        self.exporter = exporter
        self.clock = clock

    @property
    def spans(self) -> Sequence[ReadableSpan]:
        return self.exporter.get_finished_spans()

    def __call__(self) -> Sequence[ReadableSpan]:
        return self.spans


@contextmanager
def capture_spans(
    *,
    deterministic: bool = False,
    resource: Resource | None = None,
    install: bool = True,
    clock: Callable[[], int] | None = None,
) -> Iterator[CapturedSpans]:
    """Capture finished spans with a real SDK ``TracerProvider`` and an ``InMemorySpanExporter``.

    Yields a ``CapturedSpans``: call it for the finished spans so far, in end order. With
    ``deterministic=True`` ids are sequential and span times come from a ``FakeClock`` (``clock=`` to
    inject your own). With ``install=False`` the provider is not made global (use ``.provider``).
    """
    exporter = InMemorySpanExporter()
    kwargs: dict[str, Any] = {"resource": resource or Resource.create({"service.name": "toolspan-test"})}
    if deterministic:
        kwargs["id_generator"] = SequentialIdGenerator()
    if deterministic and clock is None:
        clock = FakeClock()
    provider = TracerProvider(**kwargs) if clock is None else clocked_tracer_provider(clock, **kwargs)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    finished = CapturedSpans(provider, exporter, clock)
    try:
        if install:
            with installed_tracer_provider(provider):
                yield finished
        else:
            yield finished
    finally:
        provider.shutdown()


def replay_fixture(source: Any, **options: Any) -> Any:
    """A pytest fixture running its test inside ``toolspan.replay(source, **options)``.

    ``recorded_run = toolspan.testing.replay_fixture("tests/data/run.jsonl")`` at module level, then a test
    taking ``recorded_run`` calls its tools without running their bodies. The fixture's value is the
    ``replay`` object.
    """
    import pytest

    from toolspan._decisions.replay import replay

    @pytest.fixture
    def _replay_fixture() -> Iterator[Any]:
        with replay(source, **options) as session:
            yield session

    return _replay_fixture
