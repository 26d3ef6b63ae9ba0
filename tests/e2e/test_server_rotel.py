"""``toolspan serve`` behind a real Collector (rotel): the SDK's OTLP exporter -> rotel -> the server's
OTLP/gRPC port. A running tool's pending record passes through rotel unchanged, so its act is on the
server's stream before the tool returns, and the act and observe pair by execution id. Text deltas pass as
OTLP log records and are relayed before the tool returns, never stored."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import Rotel, _clean_env, _rotel_binary
from tests.support.paths import APPS
from tests.support.server import SseEvent, running_server, sse_stream

pytestmark = [pytest.mark.e2e, pytest.mark.processes]

APP = APPS / "server_live_app.py"


@pytest.fixture(scope="session")
def rotel_binary(request: pytest.FixtureRequest) -> Path:
    """rotel from ``scripts/e2e-deps.sh`` (run through the shared fixture when it is not installed yet)."""
    found = _rotel_binary()
    if found is None:
        found = request.getfixturevalue("e2e_binaries")[0]
    assert found is not None
    return found


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_a_running_tool_reaches_the_server_through_rotel(
    rotel_binary: Path, tmp_path: Path, protocol: str
) -> None:
    with running_server(tmp_path) as server:
        collector = Rotel(rotel_binary, tmp_path, server.grpc_port)
        collector.start()
        try:
            stream = sse_stream(server, "/api/stream", comments=True)
            assert next(stream) == SseEvent(None, "comment", "connected")
            events: Iterator[SseEvent] = (e for e in stream if e.event != "comment")
            env = {
                **_clean_env(),
                "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint(protocol),
                "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
                "TOOLSPAN_PENDING_SPANS": "true",
            }
            app = subprocess.Popen([sys.executable, str(APP), str(tmp_path), "finish"], env=env)
            try:
                act = next(events)
                assert (act.event, (tmp_path / "started").exists(), (tmp_path / "returned").exists()) == (
                    "act",
                    True,
                    False,
                )
                (tmp_path / "release").write_text("1")
                observe = next(events)
                assert observe.event == "observe"
                assert observe.json()["execution_id"] == act.json()["execution_id"]
                assert observe.json()["observation"] == "PARIS"
                assert app.wait(60) == 0
            finally:
                app.kill()
                stream.close()
            assert server.counts() == {"spans": 2, "traces": 1}
        finally:
            collector.stop()


STREAM_APP = APPS / "server_stream_app.py"


def test_text_deltas_reach_the_server_through_rotel_as_log_records(
    rotel_binary: Path, tmp_path: Path
) -> None:
    with running_server(tmp_path) as server:
        collector = Rotel(rotel_binary, tmp_path, server.grpc_port)
        collector.start()
        try:
            stream = sse_stream(server, "/api/stream", comments=True)
            assert next(stream) == SseEvent(None, "comment", "connected")
            events: Iterator[SseEvent] = (e for e in stream if e.event in ("act", "text_delta"))
            env = {
                **_clean_env(),
                "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint("grpc"),
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                "OTEL_BLRP_SCHEDULE_DELAY": "50",
                "TOOLSPAN_PENDING_SPANS": "true",
            }
            app = subprocess.Popen([sys.executable, str(STREAM_APP), str(tmp_path), "1"], env=env)
            try:
                got = [next(events) for _ in range(3)]
                assert not (tmp_path / "release-0").exists()  # the tool is still running
                deltas = [e.json()["delta"] for e in got if e.event == "text_delta"]
                assert deltas == ["step 0 ", "thinking"]
                (tmp_path / "release-0").write_text("1")
                assert app.wait(60) == 0
            finally:
                app.kill()
                stream.close()
            health = server.get_json("/healthz")
            assert (health["relayed_text_deltas"], health["log_records"]) == (2, 0)
        finally:
            collector.stop()
