"""The ``processes`` marker, checked: a test that starts a real process (a ``toolspan serve``, PostgreSQL,
Chromium, the Collector, Jaeger, node, a child Python) carries ``@pytest.mark.processes`` (or its module's
``pytestmark``), so ``pytest -m "not processes"`` runs everything that stays in this process.

A pytest plugin (``tests/conftest.py`` loads it): an audit hook sees every process this interpreter
starts (``subprocess.Popen``, which ``asyncio`` and Playwright use too, ``os.fork``, ``os.posix_spawn``,
``os.system`` ...) and ``multiprocessing``'s processes (its spawn and forkserver starts raise no audit event);
a test without the marker that starts one while it is set up or run fails, naming what it started, and so
does a test without the marker that uses a fixture which started one (a module's server, the session's
PostgreSQL), whichever test set the fixture up. A session fixture's processes count only for the tests that
use it (``--store postgres`` starts one PostgreSQL in whichever test comes first); teardown only stops what a
setup started.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Generator
from multiprocessing import process
from pathlib import Path
from typing import Any

import pytest

MARKER = "processes"
# The audit events of a new process (https://docs.python.org/3/library/audit_events.html).
SPAWN_EVENTS = frozenset(
    {"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system", "pty.spawn"}
)


class Watch:
    """What the running test started, and which fixtures started processes (by name and where defined)."""

    def __init__(self) -> None:
        self.active = False
        self.started: list[str] = []
        self.fixtures: list[tuple[str, str, str]] = []  # being set up: (name, baseid, scope), innermost last
        self.spawning: dict[tuple[str, str], str] = {}  # (name, baseid) -> what it started
        self._lock = threading.Lock()

    def saw(self, what: str) -> None:
        if not self.active:
            return
        with self._lock:
            if self.fixtures:
                name, baseid, scope = self.fixtures[-1]
                # A fixture a session fixture sets up is that fixture's business (``--store postgres``: the
                # autouse store fixture starts PostgreSQL for every test server; only marked tests start one).
                if not any(outer == "session" for _, _, outer in self.fixtures[:-1]):
                    self.spawning.setdefault((name, baseid), what)
                if scope == "session":
                    return
            self.started.append(what)

    def take(self) -> list[str]:
        with self._lock:
            started, self.started = self.started, []
        return started

    def fixtures_of(self, item: pytest.Item) -> list[str]:
        """The fixtures this test uses that started a process."""
        # The request's names include the fixtures asked for by name (``request.getfixturevalue``).
        request = getattr(item, "_request", None)
        names = set(getattr(request, "fixturenames", None) or getattr(item, "fixturenames", ()))
        return [
            f"fixture {name!r}: {what}"
            for (name, baseid), what in self.spawning.items()
            if name in names and item.nodeid.startswith(baseid)
        ]


WATCH = Watch()


# ``platform.processor()`` runs ``uname -p`` once per interpreter; the model clients' headers ask for it (the
# ``openai`` client does on its first request): a question to the system, not a process a test drives.
ASIDE = frozenset({"uname -p"})


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event in SPAWN_EVENTS and WATCH.active:
        program = _program(event, args)
        if program not in ASIDE:
            WATCH.saw(f"{event} {program}".rstrip())


def _program(event: str, args: tuple[Any, ...]) -> str:
    """The first words of the command, where the event carries one."""
    at = {"subprocess.Popen": 1, "os.posix_spawn": 1, "os.spawn": 2}.get(event)
    if at is None or len(args) <= at:
        return ""
    argv = args[at]
    words = [str(part) for part in argv[:3]] if isinstance(argv, (list, tuple)) else str(argv).split()[:3]
    return " ".join([Path(words[0]).name, *words[1:]]) if words else ""


_start = process.BaseProcess.start


def _watched_start(self: process.BaseProcess) -> None:
    WATCH.saw(f"multiprocessing {type(self).__name__}")
    _start(self)


def pytest_configure(config: pytest.Config) -> None:
    sys.addaudithook(_audit)  # an audit hook stays for the interpreter's life: it only records when active
    process.BaseProcess.start = _watched_start  # type: ignore[method-assign]


def _check(item: pytest.Item, phase: str, started: list[str]) -> None:
    if item.get_closest_marker(MARKER) is not None or not started:
        return
    shown = "; ".join(dict.fromkeys(started))
    pytest.fail(
        f"{item.nodeid} starts a process in its {phase} ({shown}) but is not marked @pytest.mark.{MARKER}"
        " (docs/development.md)",
        pytrace=False,
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    WATCH.take()
    WATCH.active = True
    try:
        yield
    finally:
        WATCH.active = False
    _check(item, "setup", WATCH.take() + WATCH.fixtures_of(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    WATCH.take()
    WATCH.active = True
    try:
        yield
    finally:
        WATCH.active = False
    _check(item, "call", WATCH.take())


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> Any:
    WATCH.fixtures.append((fixturedef.argname, fixturedef.baseid, fixturedef.scope))
    try:
        return (yield)
    finally:
        WATCH.fixtures.pop()
