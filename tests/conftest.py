"""Shared fixtures: a real SDK provider capturing spans, clean configuration, threading instrumentation,
and a headless Chromium for the page tests."""

from __future__ import annotations

import atexit
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import tests.support.server
from tests.support.instrumentation import Spans
from tests.support.postgres import Postgres, bin_dir
from toolspan.config import Config, set_config
from toolspan.testing import capture_spans

if TYPE_CHECKING:
    from playwright.sync_api import Browser

# A test that starts a real process carries @pytest.mark.processes, checked as it runs.
pytest_plugins = ["tests.support.processes"]

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


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store",
        choices=("sqlite", "postgres"),
        default=os.environ.get("TOOLSPAN_TEST_STORE", "sqlite"),
        help="the store every test server uses unless a test names one: an SQLite file, or a fresh database"
        " on a real PostgreSQL started for the session (also TOOLSPAN_TEST_STORE)",
    )


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """A real PostgreSQL server for the session (Debian's ``postgresql``; scripts/test.sh installs it)."""
    binaries = bin_dir()
    assert binaries is not None, "Debian's postgresql is missing: scripts/test.sh installs it (apt-get)"
    server = Postgres(binaries)
    # A run stopped by SIGTERM (a timeout, CI cancelling) unwinds as on Ctrl-C, so the cluster is stopped and
    # its directory removed, never left running.
    previous = signal.signal(signal.SIGTERM, _interrupted)
    atexit.register(server.remove)
    try:
        server.start()
        yield server
    finally:
        server.remove()
        atexit.unregister(server.remove)
        signal.signal(signal.SIGTERM, previous)


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session", autouse=True)
def _server_store(request: pytest.FixtureRequest) -> Iterator[None]:
    """With ``--store postgres``: every test server without a store of its own gets a fresh database."""
    if request.config.getoption("--store") != "postgres":
        yield
        return
    server: Postgres = request.getfixturevalue("postgres")
    tests.support.server.DEFAULT_STORE = server.fresh_url
    try:
        yield
    finally:
        tests.support.server.DEFAULT_STORE = None


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
