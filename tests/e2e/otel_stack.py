"""The real OpenTelemetry Collector and Jaeger v2 for the end-to-end tests, built from their Go modules.

``scripts/e2e-deps.sh go`` builds both into ``<repo>/.e2e/bin/`` once per ``go.sum`` (a quick check when
they are there): ``otelcol`` from ``tests/e2e/go/otelcol`` (the components ``collector-config/`` uses, every
collector module at one release) and ``jaeger`` from ``tests/e2e/go/jaeger`` (Jaeger's own all-in-one);
``scripts/e2e-deps.sh ui`` builds Jaeger's UI into ``<repo>/.e2e/jaeger-ui``, which Jaeger serves
(``backend-config/jaeger.yaml``, the config every Jaeger here runs with).
Each runs as a subprocess on free 127.0.0.1 ports, is waited for with a bounded timeout and stopped by its
pid (``Proc`` of the conftest). A Collector runs a file of ``collector-config/`` as it is, with only the
receiver's addresses moved to 127.0.0.1 free ports (``--set``), its own metrics endpoint off (a fixed port),
and, where a file also ships to Tempo (which cannot run here), the Tempo exporter taken out of the pipeline.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import E2E_DIR, HOST, INSTALL_SCRIPT, REPO, Proc, _clean_env, port_open
from tests.support.server import free_ports

BIN = E2E_DIR / "bin"
CONFIG_DIR = REPO / "collector-config"
JAEGER_CONFIG = REPO / "backend-config" / "jaeger.yaml"
JAEGER_VERSION = "2.12.0"  # the module github.com/jaegertracing/jaeger v1.75.0
JAEGER_UI = E2E_DIR / "jaeger-ui"
COLLECTOR_VERSION = "0.160.0"
READY_TIMEOUT_S = 30
BUILD_TIMEOUT_S = 1800


def _install(part: str, *made: Path) -> None:
    """``scripts/e2e-deps.sh PART``, which builds what ``made`` names or finds it built (fails the test
    otherwise)."""
    done = subprocess.run(
        [shutil.which("bash") or "bash", str(INSTALL_SCRIPT), part],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0 or not all(path.exists() for path in made):
        pytest.fail(
            f"{INSTALL_SCRIPT.name} {part} failed ({done.returncode}):\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )


def go_binaries() -> tuple[Path, Path]:
    """``(otelcol, jaeger)`` after ``scripts/e2e-deps.sh go`` built them (or found them built)."""
    otelcol, jaeger = BIN / "otelcol", BIN / "jaeger"
    _install("go", otelcol, jaeger)
    return otelcol, jaeger


def jaeger_ui() -> Path:
    """The folder of Jaeger's built UI, after ``scripts/e2e-deps.sh ui`` built it (or found it built)."""
    _install("ui", JAEGER_UI / "index.html")
    return JAEGER_UI


def http_get(url: str, timeout: float = 30) -> tuple[int, bytes]:
    """``(status, body)`` of a GET (an HTTP error status is returned, not raised)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class Jaeger:
    """A running Jaeger v2 all-in-one (memory storage) with its UI (``ui``: the built UI's folder), and a
    small client of its query API."""

    def __init__(self, binary: Path, workdir: Path, ui: Path) -> None:
        self.query_port, query_grpc, self.otlp_grpc_port, self.otlp_http_port = free_ports(4)
        env = {
            **_clean_env(),
            "JAEGER_HOST": HOST,
            "JAEGER_UI_ASSETS": str(ui),
            "JAEGER_QUERY_HTTP_PORT": str(self.query_port),
            "JAEGER_QUERY_GRPC_PORT": str(query_grpc),
            "JAEGER_OTLP_GRPC_PORT": str(self.otlp_grpc_port),
            "JAEGER_OTLP_HTTP_PORT": str(self.otlp_http_port),
        }
        self.url = f"http://{HOST}:{self.query_port}"
        self.proc = Proc(
            "jaeger", [str(binary), "--config", str(JAEGER_CONFIG)], env, workdir / "jaeger.log", workdir
        )
        self.startup_s = self.proc.wait_until(self._ready, READY_TIMEOUT_S)

    def _ready(self) -> bool:
        try:
            status, _ = http_get(self.url + "/api/services", timeout=2)
        except OSError:
            return False
        return status == 200 and port_open(self.otlp_grpc_port) and port_open(self.otlp_http_port)

    @property
    def otlp_grpc(self) -> str:
        """``host:port`` of its OTLP/gRPC receiver (what a Collector's ``otlp_grpc`` exporter names)."""
        return f"{HOST}:{self.otlp_grpc_port}"

    def get(self, path: str, **query: Any) -> bytes:
        url = self.url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        status, body = http_get(url)
        assert status == 200, (url, status, body[:500])
        return body

    def get_json(self, path: str, **query: Any) -> Any:
        return json.loads(self.get(path, **query))

    def trace_v1(self, trace_id: str) -> bytes:
        return self.get(f"/api/traces/{trace_id}")

    def trace_v3(self, trace_id: str) -> bytes:
        return self.get(f"/api/v3/traces/{trace_id}")

    def span_count(self, trace_id: str) -> int:
        status, body = http_get(f"{self.url}/api/traces/{trace_id}")
        if status != 200:
            return 0
        data = json.loads(body).get("data") or []
        return sum(len(t.get("spans") or []) for t in data)

    def wait_for_trace(self, trace_id: str, spans: int, timeout_s: float = 60) -> None:
        """Until Jaeger holds ``spans`` spans of the trace (fails the test after ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        count = 0
        while time.monotonic() < deadline:
            count = self.span_count(trace_id)
            if count >= spans:
                assert count == spans, f"trace {trace_id}: {count} spans in Jaeger, {spans} sent"
                return
            time.sleep(0.1)
        pytest.fail(f"trace {trace_id}: {count} of {spans} spans in Jaeger after {timeout_s} s")

    def stop(self) -> None:
        self.proc.stop()


def validate(
    binary: Path, config: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The Collector's own ``validate`` of a configuration file."""
    return subprocess.run(
        [str(binary), "validate", "--config", str(config)],
        env={**_clean_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


class Collector:
    """The Collector running one configuration file of ``collector-config/``."""

    def __init__(
        self,
        binary: Path,
        config: Path,
        workdir: Path,
        env: Mapping[str, str],
        exporters: Sequence[str] | None = None,
    ) -> None:
        self.grpc_port, self.http_port = free_ports(2)
        sets = [
            f"receivers.otlp.protocols.grpc.endpoint={HOST}:{self.grpc_port}",
            f"receivers.otlp.protocols.http.endpoint={HOST}:{self.http_port}",
            "service.telemetry.metrics.level=none",
        ]
        if exporters is not None:  # the pipeline without what cannot run here (Tempo)
            sets.append(f"service.pipelines.traces.exporters=[{','.join(exporters)}]")
        argv = [str(binary), "--config", str(config), *(f"--set={s}" for s in sets)]
        self.log = workdir / f"otelcol-{self.grpc_port}.log"
        self.proc = Proc("otelcol", argv, {**_clean_env(), **env}, self.log, workdir)
        self.startup_s = self.proc.wait_until(
            lambda: port_open(self.grpc_port) and port_open(self.http_port), READY_TIMEOUT_S
        )

    def endpoint(self, protocol: str) -> str:
        """The ``OTEL_EXPORTER_OTLP_ENDPOINT`` an application sends to."""
        return f"http://{HOST}:{self.grpc_port if protocol == 'grpc' else self.http_port}"

    def post_json(self, body: bytes) -> int:
        """Send one OTLP/JSON ``ExportTraceServiceRequest`` to its OTLP/HTTP receiver; the status."""
        request = urllib.request.Request(
            f"http://{HOST}:{self.http_port}/v1/traces",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)

    def stop(self) -> None:
        self.proc.stop()


def app_env(endpoint: str, protocol: str, **extra: str) -> dict[str, str]:
    """The instrumented application's environment: the standard ``OTEL_*`` variables only."""
    return {
        **_clean_env(),
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
        "OTEL_SERVICE_NAME": "toolspan-e2e",
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


def environ_without_otel() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
