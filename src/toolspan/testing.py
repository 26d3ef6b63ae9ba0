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
from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

from toolspan._kernel.otel_internals import restore_global_provider, swap_global_provider

__all__ = [
    "CapturedSpans",
    "FakeClock",
    "SequentialIdGenerator",
    "capture_spans",
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
    """A clock for the SDK that advances by ``step_ns`` on every reading.

    Use as a context manager: while active, span start/end and event times come from it.
    """

    def __init__(self, start_ns: int = 1_700_000_000_000_000_000, step_ns: int = 1_000_000) -> None:
        self._lock = threading.Lock()
        self._now = start_ns
        self.step_ns = step_ns
        self._saved: Callable[[], int] | None = None

    def __call__(self) -> int:
        with self._lock:
            value = self._now
            self._now += self.step_ns
        return value

    def __enter__(self) -> FakeClock:
        self._saved = getattr(sdk_trace, "time_ns")  # noqa: B009 - the SDK's module-level clock
        setattr(sdk_trace, "time_ns", self)  # noqa: B010
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved is not None:
            setattr(sdk_trace, "time_ns", self._saved)  # noqa: B010
            self._saved = None


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
    ``clock`` the ``FakeClock`` of a deterministic capture (else ``None``)."""

    __slots__ = ("clock", "exporter", "provider")

    def __init__(
        self, provider: TracerProvider, exporter: InMemorySpanExporter, clock: FakeClock | None
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
    clock: FakeClock | None = None,
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
    provider = TracerProvider(**kwargs)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if deterministic and clock is None:
        clock = FakeClock()
    finished = CapturedSpans(provider, exporter, clock)
    try:
        if clock is not None:
            clock.__enter__()
        if install:
            with installed_tracer_provider(provider):
                yield finished
        else:
            yield finished
    finally:
        if clock is not None:
            clock.__exit__()
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
