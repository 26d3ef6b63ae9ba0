"""``scripts/jaeger.sh``: Jaeger with its UI behind the Collector in one command, as ``docs/shipping.md``
opens with. Started as a user starts it (every port moved to a free one by its variable), it prints where
everything is, carries a run of decorated tools from the Collector into Jaeger, and stops both programs on
Ctrl-C; a port already taken stops it before anything starts, with one line naming the port."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import HOST, _clean_env, port_open
from tests.e2e.otel_stack import http_get, jaeger_ui
from tests.support import terminal
from tests.support.paths import REPO
from tests.support.server import free_ports, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.processes]

SCRIPT = REPO / "scripts" / "jaeger.sh"
PORT_VARIABLES = (
    "OTLP_GRPC_PORT",
    "OTLP_HTTP_PORT",
    "COLLECTOR_METRICS_PORT",
    "JAEGER_QUERY_HTTP_PORT",
    "JAEGER_QUERY_GRPC_PORT",
    "JAEGER_OTLP_GRPC_PORT",
    "JAEGER_OTLP_HTTP_PORT",
)
START_TIMEOUT_S = 120


def start(ports: dict[str, int], tmp_path: Path, **env: str) -> subprocess.Popen[str]:
    env = {**_clean_env(), "TMPDIR": str(tmp_path), **{k: str(v) for k, v in ports.items()}, **env}
    return terminal.start(["bash", str(SCRIPT)], env, cwd=tmp_path)


def banner(proc: subprocess.Popen[str]) -> str:
    """What the script prints up to its last line, ``Ctrl-C stops both.``."""
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("Ctrl-C stops both."):
            return "".join(lines)
    assert proc.stderr is not None
    pytest.fail(f"jaeger.sh ended ({proc.wait()}) before it was ready:\n{''.join(lines)}{proc.stderr.read()}")


@pytest.fixture
def ports() -> dict[str, int]:
    jaeger_ui()  # built once (quick when built): the script's own build step is then a check
    return dict(zip(PORT_VARIABLES, free_ports(len(PORT_VARIABLES)), strict=True))


@pytest.fixture
def otlp_elsewhere() -> Iterator[socket.socket]:
    """A socket listening where a shell's ``OTEL_EXPORTER_OTLP_ENDPOINT`` points (what connects, if
    anything, waits in its backlog)."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        sock.listen()
        sock.setblocking(False)
        yield sock


@pytest.fixture
def running(
    ports: dict[str, int], tmp_path: Path, otlp_elsewhere: socket.socket
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    # As from a shell that sends its applications' OTLP somewhere (Jaeger and the Collector inherit it).
    endpoint = "http://{}:{}".format(*otlp_elsewhere.getsockname())
    proc = start(ports, tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint)
    try:
        yield proc, banner(proc)
    finally:
        terminal.stop(proc)


def test_it_starts_the_collector_and_jaeger_with_its_ui_says_where_and_stops_both_on_ctrl_c(
    running: tuple[subprocess.Popen[str], str],
    ports: dict[str, int],
    tmp_path: Path,
    otlp_elsewhere: socket.socket,
) -> None:
    proc, text = running
    ui = f"http://{HOST}:{ports['JAEGER_QUERY_HTTP_PORT']}"
    # Every port is printed, the UI and where to send OTLP first.
    shown = [line for line in text.splitlines() if not line.startswith("e2e-deps: ")]
    assert shown[0].startswith(f"Jaeger UI          {ui}/")
    for variable, port in ports.items():
        assert re.search(rf"\b{HOST}:{port}\b", text), (variable, text)
    assert f"toolspan find --jaeger {ui} --service SERVICE" in text
    # Jaeger serves its real UI, and the Collector its own metrics.
    status, index = http_get(ui + "/")
    assert (status, b"<title>Jaeger UI</title>" in index) == (200, True)
    status, metrics = http_get(f"http://{HOST}:{ports['COLLECTOR_METRICS_PORT']}/metrics")
    assert (status, b"otelcol_" in metrics) == (200, True)
    # The guide's recipe, run as written (only the OTLP address moved to this run's free port): its tool
    # calls reach Jaeger through the Collector, with the model's call id and the failed call marked.
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", recipe()],
        cwd=tmp_path,
        env={
            **_clean_env(),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{HOST}:{ports['OTLP_GRPC_PORT']}",
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")

    def run() -> list[dict[str, Any]]:
        status, body = http_get(f"{ui}/api/traces?service=my-agent&lookback=1h")
        data = json.loads(body)["data"] if status == 200 else []
        return data[0]["spans"] if data and len(data[0]["spans"]) >= 3 else []

    spans = wait_for(run, "the recipe's run in Jaeger", timeout=60)
    tags = {s["operationName"]: {t["key"]: t["value"] for t in s["tags"]} for s in spans}
    assert set(tags) == {"invoke_agent planner", "execute_tool get_weather", "execute_tool divide"}
    assert tags["execute_tool get_weather"]["gen_ai.tool.call.id"] == "call_weather_1"
    assert tags["execute_tool divide"]["error"] is True
    # Ctrl-C: both programs stop, and it says so.
    terminal.ctrl_c(proc)
    try:
        assert proc.wait(timeout=30) == 0
    except subprocess.TimeoutExpired:
        pytest.fail(f"jaeger.sh still runs 30 s after Ctrl-C; its programs' logs end:\n{_log_tails(text)}")
    assert proc.stdout is not None
    assert "jaeger.sh: stopped" in proc.stdout.read()
    for port in ports.values():
        assert not port_open(port), port
    # Jaeger sent no traces of its own (its query service's, on by default in Jaeger v2) to the shell's
    # OTLP endpoint, even as it stopped: they would come back as a service "jaeger", and where nothing
    # listens its stop would wait 10 s for the export to give up.
    with pytest.raises(BlockingIOError):
        otlp_elsewhere.accept()


def test_a_port_in_use_stops_it_before_anything_starts_with_one_line_naming_it(
    ports: dict[str, int], tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind((HOST, ports["JAEGER_QUERY_HTTP_PORT"]))
        taken.listen()
        proc = start(ports, tmp_path)
        out, err = proc.communicate(timeout=START_TIMEOUT_S)
    assert proc.returncode == 1
    (line,) = [line for line in err.splitlines() if line.startswith("jaeger.sh:")]
    assert f"port {ports['JAEGER_QUERY_HTTP_PORT']} of {HOST} is in use" in line
    assert "Ctrl-C" not in out
    others = [p for v, p in ports.items() if v != "JAEGER_QUERY_HTTP_PORT"]
    assert not any(port_open(p) for p in others)


def _log_tails(banner_text: str) -> str:
    """The last lines of Jaeger's and the Collector's logs, in the folder the banner names."""
    found = re.search(r"^logs +(\S+)$", banner_text, re.MULTILINE)
    if found is None:
        return "(the banner names no logs folder)"
    tails = []
    for name in ("jaeger.log", "otelcol.log"):
        path = Path(found.group(1)) / name
        lines = path.read_text(errors="replace").splitlines() if path.exists() else ["(none)"]
        tails.append(f"{name}:\n" + "\n".join(lines[-15:]))
    return "\n".join(tails)


def recipe() -> str:
    """The guide's bash block that writes and runs ``my_agent.py`` against the running script."""
    guide = (REPO / "docs" / "shipping.md").read_text(encoding="utf-8")
    after = guide.split("*Needs `bash scripts/jaeger.sh` running.*\n\n```bash\n", 1)[1]
    return after.split("\n```\n", 1)[0] + "\n"


def test_the_script_is_the_one_the_guide_opens_with() -> None:
    guide = (REPO / "docs" / "shipping.md").read_text(encoding="utf-8")
    first = guide.split("\n## ")[1]  # the guide's first section
    assert first.startswith("You want your tool calls in Jaeger: run this")
    assert "```bash\nbash scripts/jaeger.sh\n```" in first
