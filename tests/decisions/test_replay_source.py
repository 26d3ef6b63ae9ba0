"""Replay from a trace held by ``toolspan serve`` (``toolspan._decisions.replay_source`` and ``GET
/api/traces/{id}/otlp``): a real application process records a run over OTLP into a real server process; the
run replays from the server's URL exactly as from the file the same process wrote, with no tool body run."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolspan
from tests.apps import replay_server_app as app
from tests.support.paths import APPS, TESTS
from tests.support.server import Server, free_port, running_server, sdk_env
from toolspan.bridge.model import span_fields
from toolspan.bridge.readers import read_spans, spans_from_document
from toolspan.config import Config, set_config
from toolspan.testing import capture_spans

APP = APPS / "replay_server_app.py"
CORPUS = TESTS / "corpus" / "openai_v2"


class Recorded:
    def __init__(self, server: Server, out: Path) -> None:
        self.server = server
        self.file = out / "traces.jsonl"
        run = json.loads((out / "run.json").read_text())
        self.seen: list[Any] = run["seen"]
        self.trace_id: str = run["trace_id"]
        self.url = f"{server.url}/api/traces/{self.trace_id}"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    tmp = tmp_path_factory.mktemp("replay-server")
    with running_server(tmp) as server:
        subprocess.run(
            [sys.executable, str(APP), str(tmp)],
            env=sdk_env(server, "http/protobuf"),
            check=True,
            capture_output=True,
            timeout=120,
        )
        yield Recorded(server, tmp)


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    app.bodies.clear()
    set_config(Config())
    yield
    set_config(None)


def _replayed(source: Any, **options: Any) -> tuple[list[Any], Counter[str], list[Any]]:
    """What the agent sees when its run replays from ``source``, the bodies that ran, the tool spans."""
    app.bodies.clear()
    with capture_spans() as spans, toolspan.replay(source, **options):
        seen, _ = app.agent_run()
    tools = [s for s in spans() if (s.attributes or {}).get("gen_ai.operation.name") == "execute_tool"]
    return json.loads(json.dumps(seen)), Counter(app.bodies), sorted(tools, key=lambda s: s.start_time or 0)


@pytest.mark.processes
def test_the_otlp_route_returns_the_stored_spans_losslessly(recorded: Recorded) -> None:
    status, headers, body = recorded.server.request("GET", f"/api/traces/{recorded.trace_id}/otlp")
    assert (status, headers["content-type"]) == (200, "application/json")
    served = spans_from_document(json.loads(body))
    from_file, _ = read_spans(recorded.file)

    def key(spans: list[Any]) -> list[str]:
        return sorted(json.dumps(span_fields(s), sort_keys=True) for s in spans)

    assert len(served) == 6  # the agent and its five tool calls
    assert key(served) == key(from_file)


@pytest.mark.processes
def test_replay_from_the_server_serves_every_recorded_result_with_no_body_run(recorded: Recorded) -> None:
    assert recorded.seen[3] == "ValueError: bad x 3"
    expected = [*recorded.seen[:3], "ValueError: bad x 3", recorded.seen[4]]
    base, tid = recorded.server.url, recorded.trace_id
    for source, options in (
        (recorded.url, {}),
        (f"{base}/api/traces/{tid}/tree", {}),
        (f"{base}/traces/{tid}", {}),
        (f"{base}/api/jobs/{tid}/replay", {}),
        (f"{base}/api/jobs/{tid}/trace/page?access_token=", {}),
        (base, {"trace_id": tid}),
        (base + "/", {"trace_id": tid.upper()}),
    ):
        seen, bodies, tools = _replayed(source, **options)
        assert (seen, bodies) == (expected, Counter()), source
        assert [t.attributes["toolspan.replay.served"] for t in tools] == [True] * 5
        assert {t.attributes["toolspan.replay.source.trace_id"] for t in tools} == {tid}
        # Each result came from the recording process's body, none from this one.
        pids = {r["pid"] for r in seen if isinstance(r, dict)}
        assert pids == {recorded.seen[0]["pid"]} != {os.getpid()}


@pytest.mark.processes
def test_until_and_divergence_behave_as_from_the_file(recorded: Recorded) -> None:
    from_file, _ = read_spans(recorded.file)
    second = sorted((s for s in from_file if s.attributes.get("gen_ai.tool.name")), key=lambda s: s.start_ns)[
        1
    ]
    for until in (2, "exec_" + second.span_id):
        by_url = _replayed(recorded.url, until=until)
        by_file = _replayed(str(recorded.file), until=until)
        assert by_url[:2] == by_file[:2]
        served = [[t.attributes["toolspan.replay.served"] for t in r[2]] for r in (by_url, by_file)]
        assert served[0] == served[1]
        # The second call ran for real, then the one whose recorded call failed (nothing was committed); the
        # calls before it and the committed ones after it were served.
        assert by_url[1] == Counter(send_email=1, flaky=1)
        assert [t.attributes["toolspan.replay.served"] for t in by_url[2]] == [True, False, True, False, True]
    errors = []
    for source in (recorded.url, str(recorded.file)):
        with pytest.raises(toolspan.ReplayDivergence) as info, toolspan.replay(source):
            app.agent_run(second_to="c@example.com")
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert 'actual:   send_email({"body":"","to":"c@example.com"})' in errors[0]
    live, bodies, _ = _replayed(recorded.url, on_divergence="live")
    assert bodies == Counter()
    assert live[:2] == recorded.seen[:2]


@pytest.mark.processes
def test_errors_come_up_front_with_a_reason(recorded: Recorded) -> None:
    base = recorded.server.url
    unknown = "0" * 31 + "1"
    cases = [
        (f"{base}/api/traces/{unknown}", f"toolspan serve at {base} has no trace '{unknown}'"),
        (f"{base}/api/traces/not-a-trace", f"toolspan serve at {base} has no trace 'not-a-trace'"),
    ]
    for url, message in cases:
        with pytest.raises(toolspan.ReplayError) as info:
            toolspan.replay(url)
        assert str(info.value) == message
    with pytest.raises(toolspan.ReplayError) as info:
        toolspan.replay(base)
    assert str(info.value) == (
        f"{base}: which trace? Give its URL (.../api/traces/<trace id>) or trace_id= with the server's URL"
    )
    with pytest.raises(toolspan.ReplayError) as info:
        toolspan.replay(f"{base}/nothing/here/", trace_id=unknown)
    assert str(info.value) == (
        f"toolspan serve at {base}/nothing/here cannot serve a trace for replay"
        f" (no route '/nothing/here/api/traces/{unknown}/otlp'): an older server?"
    )
    dead = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(
        toolspan.ReplayError, match=r"^cannot reach toolspan serve at http://127\.0\.0\.1:\d+: "
    ):
        toolspan.replay(f"{dead}/api/traces/{recorded.trace_id}")
    with pytest.raises(toolspan.ReplayError, match=r"is not in the recording"):
        toolspan.replay(recorded.url, trace_id=unknown)
    assert app.bodies == Counter()


@pytest.mark.processes
def test_a_server_with_a_token_needs_it(
    recorded: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = recorded.server.get(f"/api/traces/{recorded.trace_id}/otlp")
    monkeypatch.delenv("TOOLSPAN_SERVER_TOKEN", raising=False)
    with running_server(tmp_path, "--token", "s3cret") as server:
        status, _, _ = server.post_otlp(body, "application/json", Authorization="Bearer s3cret")
        assert status == 200
        url = f"{server.url}/api/traces/{recorded.trace_id}"
        for token, hint in (
            (None, "pass token= or set TOOLSPAN_SERVER_TOKEN"),
            ("wrong", "the token given was refused"),
        ):
            with pytest.raises(toolspan.ReplayError) as info:
                toolspan.replay(url, token=token)
            assert str(info.value) == (
                f"toolspan serve at {server.url} refused the request"
                f" (401: missing or wrong bearer token): {hint}"
            )
        expected = [*recorded.seen[:3], "ValueError: bad x 3", recorded.seen[4]]
        assert _replayed(url, token="s3cret")[:2] == (expected, Counter())
        monkeypatch.setenv("TOOLSPAN_SERVER_TOKEN", "s3cret")
        assert _replayed(url)[:2] == (expected, Counter())


@pytest.mark.processes
def test_the_otlp_route_joins_log_records_and_answers_404_and_openapi(tmp_path: Path) -> None:
    from toolspan.bridge.readers._logs import attach_logs, logs_from_bytes

    trace = "a5e8b57ed112b58325367f7c32edc967"
    with running_server(tmp_path) as server:
        logs = (CORPUS / "logs.jsonl").read_bytes()
        server.request("POST", "/v1/logs", logs, {"Content-Type": "application/json"})
        server.post_otlp((CORPUS / "traces.jsonl").read_bytes(), "application/json")
        served = spans_from_document(server.get_json(f"/api/traces/{trace}/otlp"))
        spans, _ = read_spans(CORPUS / "traces.jsonl")
        joined, _ = attach_logs([s for s in spans if s.trace_id == trace], logs_from_bytes(logs))

        def key(spans: list[Any]) -> list[str]:
            return sorted(json.dumps(span_fields(s), sort_keys=True) for s in spans)

        assert key(served) == key(joined)
        assert sum(len(s.events) for s in served) > sum(len(s.events) for s in spans if s.trace_id == trace)
        status, headers, reply = server.request("GET", "/api/traces/0123/otlp")
        assert (status, headers["content-type"], json.loads(reply)) == (
            404,
            "application/json",
            {"error": "no trace '0123'", "status": 404},
        )
        paths = server.get_json("/openapi.json")["paths"]
        # Its own answers, and those every route with a token shares (test_routes.py asks for each).
        answers = paths["/api/traces/{trace_id}/otlp"]["get"]["responses"]
        assert list(answers) == ["200", "401", "403", "404", "429"]


class _NotToolspan(http.server.BaseHTTPRequestHandler):
    """Some other HTTP server at the URL given: a proxy's error page, or a body that is not a trace."""

    def do_GET(self) -> None:
        broken = "/broken/" in self.path
        self.send_response(200 if broken else 502)
        self.send_header("Content-Type", "application/json" if broken else "text/html")
        self.end_headers()
        self.wfile.write(b'{"resourceSpans": 7}' if broken else b"<html>\n<h1>Bad Gateway</h1>\n</html>")

    def log_message(self, *args: Any) -> None:
        pass


def test_another_server_at_the_url_gives_a_one_line_reason() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotToolspan)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with pytest.raises(toolspan.ReplayError) as info:
            toolspan.replay(f"{base}/api/traces/ab")
        assert str(info.value) == f"toolspan serve at {base} answered 502 for trace 'ab': Bad Gateway"
        with pytest.raises(toolspan.ReplayError) as info:
            toolspan.replay(f"{base}/broken/api/traces/ab")
        assert str(info.value) == (
            f"toolspan serve at {base}/broken sent no readable trace for 'ab':"
            f" {base}/broken/api/traces/ab/otlp: resourceSpans: not a list: 7"
        )
    finally:
        server.shutdown()
        server.server_close()
