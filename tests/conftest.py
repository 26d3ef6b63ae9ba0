"""Shared fixtures: a real SDK provider capturing spans, clean configuration, threading instrumentation."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from _instrumentation import Spans
from toolspan.config import Config, set_config
from toolspan.testing import capture_spans


@pytest.fixture
def fresh_config() -> Iterator[None]:
    """The default configuration (environment ignored) during the test, none left behind."""
    set_config(Config())
    yield
    set_config(None)


@pytest.fixture
def spans() -> Iterator[Spans]:
    """A real SDK ``TracerProvider`` installed globally for the test; call it for the finished spans."""
    with capture_spans() as finished:
        yield finished


@pytest.fixture
def content_off(fresh_config: None) -> None:
    set_config(Config(capture_content=False))


@pytest.fixture
def threading_instrumented() -> Iterator[None]:
    """The official OpenTelemetry threading instrumentation, as ``toolspan.configure()`` enables it."""
    from opentelemetry.instrumentation.threading import ThreadingInstrumentor

    instrumentor = ThreadingInstrumentor()
    already = instrumentor.is_instrumented_by_opentelemetry
    if not already:
        instrumentor.instrument()
    yield
    if not already:
        instrumentor.uninstrument()
