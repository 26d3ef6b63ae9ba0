"""The README's "Let a person decide" recipe runs as written: its server command with its two tokens, its
``agent.py`` and the command that runs it with its ``OTEL_*`` variables; a person (here a script with the
``ops`` token, doing what the inbox's buttons do) decides the call, and the agent prints what the recipe
says it prints.

The one change to the blocks: the server listens on a port it picks (``--port 0``, no gRPC, a store in the
test's directory) instead of 4318, and the address the agent uses is that port's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import REPO
from tests.support.server import wait_for

pytestmark = pytest.mark.processes

README = REPO / "README.md"
DEFAULT_URL = "http://127.0.0.1:4318"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.MULTILINE | re.DOTALL)


def recipe() -> tuple[str, str, str]:
    """The section's three blocks: the server (bash), ``agent.py`` (python), the agent's command (bash)."""
    text = README.read_text(encoding="utf-8")
    start = text.index("## Let a person decide")
    section = text[start : text.index("\n## ", start + 1)]
    blocks = [(m.group(1), m.group(2)) for m in _FENCE.finditer(section)]
    assert [language for language, _ in blocks] == ["bash", "python", "bash"]
    (_, serve), (_, agent), (_, command) = blocks
    return serve, agent, command


def environment() -> dict[str, str]:
    """The caller's environment without its ``OTEL_*``/``TOOLSPAN_*`` settings, ``toolspan`` on ``PATH``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSPAN_"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    return env


@contextmanager
def serving(serve: str, tmp: Path) -> Iterator[str]:
    """The block's server, on a port it picks; its URL, read back from its banner."""
    flags = f" --port 0 --grpc-port -1 --db {tmp / 'toolspan.db'}"
    script = re.sub(r"^(toolspan serve .*?)\s*(#.*)?$", rf"\1{flags}", serve, flags=re.MULTILINE)
    assert flags in script, serve
    log = tmp / "server.log"
    with log.open("wb") as sink:
        server = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", script], cwd=tmp, env=environment(), stdout=sink, stderr=sink
        )
    try:

        def banner() -> str | None:
            assert server.poll() is None, log.read_text("utf-8", "replace")
            found = re.search(r"OTLP/HTTP (http://\S+)/v1/traces", log.read_text("utf-8", "replace"))
            return found.group(1) if found else None

        yield wait_for(banner, "the server's banner")
    finally:
        server.terminate()
        server.wait(timeout=30)


def call(url: str, token: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Authorization": f"Bearer {token}"})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


@pytest.mark.parametrize(
    ("decision", "printed"),
    [
        ({"decision": "allow"}, '"deleted /srv/old"\n'),
        ({"decision": "deny", "note": "not today"}, "PermissionDenied: not today\n"),
    ],
    ids=["allowed", "denied"],
)
def test_a_person_decides_the_readme_agents_call(
    decision: dict[str, str], printed: str, tmp_path: Path
) -> None:
    serve, agent, command = recipe()
    exports = "".join(line + "\n" for line in serve.splitlines() if line.startswith("export "))
    tokens = dict(re.findall(r"(\w+_TOKEN)=(\S+)", exports))
    assert set(tokens) == {"APP_TOKEN", "OPS_TOKEN"}
    with serving(serve, tmp_path) as url:
        (tmp_path / "agent.py").write_text(agent.replace(DEFAULT_URL, url), encoding="utf-8")
        script = exports + command.replace(DEFAULT_URL, url)
        running = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=tmp_path,
            env=environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            waiting = wait_for(
                lambda: call(f"{url}/api/control/waiting", tokens["OPS_TOKEN"])["waiting"],
                "the call in the inbox",
            )
            (entry,) = waiting
            assert (entry["tool"], entry["arguments"]) == ("delete_files", {"path": "/srv/old"})
            body = {"execution_id": entry["execution_id"], "shown": entry["arguments_sha256"], **decision}
            call(f"{url}/api/control/decisions", tokens["OPS_TOKEN"], body)
            out, err = running.communicate(timeout=60)
        finally:
            running.kill()
            running.wait()
    assert (running.returncode, err) == (0, "")
    assert out == printed
