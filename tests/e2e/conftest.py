"""Real components for the end-to-end tests: the rotel OTLP collector and the Arize Phoenix backend.

Both are installed by ``scripts/e2e-deps.sh`` into their own venvs under ``<repo>/.e2e/`` (run once
per session: a quick check when the pinned versions are there), started as subprocesses bound to
127.0.0.1 on free ports, waited for with a bounded timeout, and stopped by their pid (terminate, then
kill). Logs go to pytest's tmp dirs and are shown when a component fails to start.

Phoenix's OTLP gRPC receiver binds every interface (Phoenix hard-codes ``[::]``); it gets a free port
and only rotel on 127.0.0.1 talks to it. Everything else listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
E2E_DIR = REPO / ".e2e"
INSTALL_SCRIPT = REPO / "scripts" / "e2e-deps.sh"
INSTALL_TIMEOUT_S = 900
ROTEL_READY_TIMEOUT_S = 20
PHOENIX_READY_TIMEOUT_S = 120
STOP_TIMEOUT_S = 10
APP = Path(__file__).with_name("agent_app.py")
HOST = "127.0.0.1"


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def port_open(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


def _rotel_binary() -> Path | None:
    found = sorted((E2E_DIR / "rotel-venv").glob("lib/python*/site-packages/rotel/rotel-agent"))
    return found[0] if found else None


def _phoenix_binary() -> Path | None:
    path = E2E_DIR / "phoenix-venv" / "bin" / "phoenix"
    return path if path.exists() else None


class Proc:
    """A component subprocess with its log file; ``stop()`` ends it by its pid."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log: Path, cwd: Path) -> None:
        self.name = name
        self.log = log
        with log.open("ab") as out:
            self.popen = subprocess.Popen(
                argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        self.pid = self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def wait_until(self, ready: Callable[[], bool], timeout_s: float) -> float:
        """Poll ``ready`` until true; fail (with the log) if the process exits or time runs out."""
        start = time.monotonic()
        while time.monotonic() - start < timeout_s:
            if not self.alive():
                pytest.fail(f"{self.name} exited with {self.popen.returncode}:\n{self.log_tail()}")
            if ready():
                return time.monotonic() - start
            time.sleep(0.2)
        self.stop()
        pytest.fail(f"{self.name} not ready after {timeout_s} s:\n{self.log_tail()}")

    def stop(self) -> None:
        """Terminate, wait, then kill if needed; always reaps the process."""
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=STOP_TIMEOUT_S)


class Phoenix:
    """A running Phoenix server and a tiny client of its REST API."""

    def __init__(self, binary: Path, workdir: Path) -> None:
        self.http_port = free_port()
        self.grpc_port = free_port()
        self.base_url = f"http://{HOST}:{self.http_port}"
        env = {
            **_clean_env(),
            "PHOENIX_HOST": HOST,
            "PHOENIX_PORT": str(self.http_port),
            "PHOENIX_GRPC_PORT": str(self.grpc_port),
            "PHOENIX_WORKING_DIR": str(workdir / "phoenix-home"),
            "PHOENIX_TELEMETRY_ENABLED": "false",
            "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        }
        self.proc = Proc("phoenix", [str(binary), "serve"], env, workdir / "phoenix.log", workdir)
        self.startup_s = self.proc.wait_until(self._ready, PHOENIX_READY_TIMEOUT_S)

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.base_url + "/healthz", timeout=2) as resp:
                ok = resp.status == 200
        except (urllib.error.URLError, OSError):
            return False
        return ok and port_open(self.grpc_port)

    def get(self, path: str, **query: Any) -> Any:
        url = self.base_url + path
        if query:
            url += "?" + urllib.parse.urlencode(query, doseq=True)
        with urllib.request.urlopen(url, timeout=30) as resp:
            return json.load(resp)

    def spans_document(self, project: str) -> dict[str, Any]:
        """Every span of ``project`` as one ``GET /v1/projects/{project}/spans`` document (all pages)."""
        data: list[Any] = []
        cursor: str | None = None
        while True:
            query: dict[str, Any] = {"limit": 1000, "sort": "start_time", "order": "asc"}
            if cursor:
                query["cursor"] = cursor
            try:
                page = self.get(f"/v1/projects/{urllib.parse.quote(project)}/spans", **query)
            except urllib.error.HTTPError as e:
                if e.code == 404:  # the project does not exist yet: nothing has arrived
                    return {"data": [], "next_cursor": None}
                raise
            data.extend(page["data"])
            cursor = page.get("next_cursor")
            if not cursor:
                return {"data": data, "next_cursor": None}

    def wait_for_spans(
        self, project: str, expected: int, timeout_s: float = 60, settle_s: float = 2.0
    ) -> dict[str, Any]:
        """Poll until ``expected`` spans are there, or the count stays unchanged for ``settle_s``
        after the timeout's first half (so a test that expects losses does not wait the whole time)."""
        start = time.monotonic()
        last_count, last_change = -1, start
        while True:
            doc = self.spans_document(project)
            count = len(doc["data"])
            now = time.monotonic()
            if count >= expected:
                return doc
            if count != last_count:
                last_count, last_change = count, now
            if now - start > timeout_s or (now - start > timeout_s / 2 and now - last_change > settle_s):
                return doc
            time.sleep(0.3)


class Rotel:
    """A rotel collector receiving OTLP gRPC and HTTP on 127.0.0.1 and forwarding to Phoenix."""

    def __init__(self, binary: Path, workdir: Path, forward_grpc_port: int) -> None:
        self.binary = binary
        self.workdir = workdir
        self.grpc_port = free_port()
        self.http_port = free_port()
        self.forward = f"http://{HOST}:{forward_grpc_port}"
        self.proc: Proc | None = None
        self.starts = 0

    def argv(self) -> list[str]:
        return [
            str(self.binary),
            "start",
            "--otlp-grpc-endpoint",
            f"{HOST}:{self.grpc_port}",
            "--otlp-http-endpoint",
            f"{HOST}:{self.http_port}",
            "--exporter",
            "otlp",
            "--otlp-exporter-endpoint",
            self.forward,
            "--otlp-exporter-protocol",
            "grpc",
            "--batch-timeout",
            "100ms",
            "--pid-file",
            str(self.workdir / f"rotel-{self.grpc_port}.pid"),
        ]

    def start(self) -> float:
        """Start (or restart, on the same ports) and wait until both receivers accept connections."""
        assert self.proc is None or not self.proc.alive(), "rotel is already running"
        self.starts += 1
        self.proc = Proc("rotel", self.argv(), _clean_env(), self.workdir / "rotel.log", self.workdir)
        return self.proc.wait_until(
            lambda: port_open(self.grpc_port) and port_open(self.http_port), ROTEL_READY_TIMEOUT_S
        )

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()

    def endpoint(self, protocol: str) -> str:
        port = self.grpc_port if protocol == "grpc" else self.http_port
        return f"http://{HOST}:{port}"


def _clean_env() -> dict[str, str]:
    """This process's environment without OpenTelemetry / toolspan settings that would leak in."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSPAN_", "PHOENIX_"))}


def app_env(endpoint: str, protocol: str, project: str, **extra: str) -> dict[str, str]:
    """Environment of the instrumented app: standard OTEL_* variables only, as a user would set them."""
    return {
        **_clean_env(),
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
        "OTEL_SERVICE_NAME": "toolspan-e2e",
        # Phoenix files spans under the project named by this resource attribute.
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}",
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


@pytest.fixture(scope="session")
def e2e_binaries() -> tuple[Path, Path]:
    """Paths of the rotel and phoenix executables, after ``scripts/e2e-deps.sh`` made sure the pinned
    versions are installed (a quick check when they are; a cold install takes a minute or two)."""
    bash = shutil.which("bash") or "bash"
    env = {**os.environ, "PYTHON": os.environ.get("PYTHON", sys.executable)}
    done = subprocess.run(
        [bash, str(INSTALL_SCRIPT), "python"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        check=False,
    )
    rotel, phoenix = _rotel_binary(), _phoenix_binary()
    if done.returncode != 0 or rotel is None or phoenix is None:
        output = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        pytest.fail(f"{INSTALL_SCRIPT.name} failed ({done.returncode}):\n{output}")
    return rotel, phoenix


@pytest.fixture(scope="session")
def phoenix(e2e_binaries: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    server = Phoenix(e2e_binaries[1], tmp_path_factory.mktemp("phoenix"))
    try:
        yield server
    finally:
        server.proc.stop()


@pytest.fixture
def rotel(e2e_binaries: tuple[Path, Path], phoenix: Phoenix, tmp_path: Path) -> Iterator[Rotel]:
    """A started rotel forwarding to the session's Phoenix; stopped at the end of the test."""
    collector = Rotel(e2e_binaries[0], tmp_path, phoenix.grpc_port)
    collector.start()
    try:
        yield collector
    finally:
        collector.stop()


@pytest.fixture
def results_dir() -> Path:
    """``<repo>/.e2e/results``: where the tests record measured counts and times as JSON."""
    path = E2E_DIR / "results"
    path.mkdir(parents=True, exist_ok=True)
    return path


def run_app(args: list[str], env: dict[str, str], timeout_s: float = 120) -> dict[str, Any]:
    """Run the instrumented app to completion; its last stdout line is a JSON result."""
    done = subprocess.run(
        [sys.executable, str(APP), *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"app {args} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.fixture
def e2e() -> Any:
    """Helpers for the tests of this folder (kept here so the tests need no import path tricks)."""

    class _E2E:
        app_env = staticmethod(app_env)
        run_app = staticmethod(run_app)
        APP = APP

    return _E2E


@pytest.fixture(scope="session")
def go_programs() -> tuple[Path, Path]:
    """``(otelcol, jaeger)``: the Collector and Jaeger built from their Go modules by
    ``scripts/e2e-deps.sh go`` (a quick check when they are built; a cold build takes minutes)."""
    from tests.e2e.otel_stack import go_binaries

    return go_binaries()


@pytest.fixture(scope="session")
def jaeger(go_programs: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One Jaeger v2 (memory storage) with its UI for the session; each test reads its own traces by id."""
    from tests.e2e.otel_stack import Jaeger, jaeger_ui

    server = Jaeger(go_programs[1], tmp_path_factory.mktemp("jaeger"), ui=jaeger_ui())
    try:
        yield server
    finally:
        server.stop()
