"""What ``toolspan serve`` builds on of uvicorn beyond its public API (``serve.uvicorn_gaps``): all there on
the uvicorn installed (``scripts/test.sh`` also runs this on the lowest version ``pyproject.toml`` allows),
each missing piece named when it is not, and a uvicorn without them serving plainly, saying so, instead of
failing."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from tests.support.server import running_server
from toolspan.server._http.serve import tune_collector, uvicorn_gaps


def test_the_installed_uvicorn_has_everything_serve_builds_on() -> None:
    assert uvicorn_gaps() == []


@pytest.mark.parametrize(
    ("owner", "name", "gap"),
    [
        (H11Protocol, "handle_events", "H11Protocol.handle_events"),
        (H11Protocol, "on_response_complete", "H11Protocol.on_response_complete"),
        (uvicorn.Server, "capture_signals", "Server.capture_signals"),
    ],
)
def test_each_missing_piece_is_named(
    monkeypatch: pytest.MonkeyPatch, owner: type, name: str, gap: str
) -> None:
    monkeypatch.delattr(owner, name)
    assert uvicorn_gaps() == [gap]


def test_a_missing_instance_field_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    def init(self: H11Protocol, *args: object, **kwargs: object) -> None:  # sets no ``cycle``
        self.loop = None
        self.transport = None

    monkeypatch.setattr(H11Protocol, "__init__", init)
    assert uvicorn_gaps() == ["H11Protocol().cycle"]


@pytest.mark.processes
def test_a_uvicorn_without_them_serves_plainly_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real server process whose uvicorn hides what serve() builds on (its protocol's fields set behind a
    # wrapper, as a uvicorn that moved them would): uvicorn itself still works.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "from uvicorn.protocols.http.h11_impl import H11Protocol\n"
        "_init = H11Protocol.__init__\n"
        "def __init__(self, *args, **kwargs):\n"
        "    _init(self, *args, **kwargs)\n"
        "H11Protocol.__init__ = __init__\n"
    )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    with running_server(tmp_path, "--grpc-port", "-1") as server:
        assert server.get_json("/healthz")["status"] == "ok"
        status, _, _ = server.request("GET", "/api/traces")
        assert status == 200
        log = server.log.read_text()
        (line,) = [line for line in log.splitlines() if "lacks" in line]
        assert "uvicorn" in line
        assert "H11Protocol().loop, H11Protocol().transport, H11Protocol().cycle" in line
        assert "plain protocol and server" in line
    assert server.proc is not None
    assert server.proc.poll() is not None  # stopped by SIGTERM, as uvicorn's own server stops


def test_the_server_keeps_start_up_objects_out_of_collections_and_collects_less_often() -> None:
    threshold = gc.get_threshold()
    gc.unfreeze()
    try:
        tune_collector()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (50_000, threshold[1], 100)
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


@pytest.mark.processes
def test_preload_loads_the_types_a_first_read_decodes_with() -> None:
    # In a fresh interpreter: the store's decoder alone does not import the OTLP protobuf types (a server
    # without gRPC would import them on its first read); ``preload``, called as the server starts, does.
    code = (
        "import sys\n"
        "from toolspan.server._rows.codec import preload\n"
        "name = 'opentelemetry.proto.trace.v1.trace_pb2'\n"
        "before = name in sys.modules\n"
        "preload()\n"
        "print(before, name in sys.modules)\n"
    )
    command = [sys.executable, "-c", code]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.split() == ["False", "True"]


def test_the_server_loads_the_decode_types_before_it_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolspan.server import ServerConfig
    from toolspan.server._http import serve as module

    done: list[str] = []

    def serving(config: object, store: object, uvicorn: object, sock: Any) -> int:
        sock.close()
        done.append("serve")
        return 0

    monkeypatch.setattr(module, "preload", lambda: done.append("preload"))
    monkeypatch.setattr(module, "_serve", serving)
    assert module.serve(ServerConfig(db=str(tmp_path / "store.db"), port=0, grpc_port=None)) == 0
    assert done == ["preload", "serve"]
