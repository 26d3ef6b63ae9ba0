"""Shared fixtures: a real SDK provider capturing spans, clean configuration, threading instrumentation,
and a headless Chromium for the page tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from _instrumentation import Spans
from toolspan.config import Config, set_config
from toolspan.testing import capture_spans

if TYPE_CHECKING:
    from playwright.sync_api import Browser

# Debian's chromium (scripts/test.sh installs it), driven by Playwright: its own browser download is not used.
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


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


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless Chromium per test module."""
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.is_file(), "Debian's chromium is missing: scripts/test.sh installs it (apt-get)"
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()
