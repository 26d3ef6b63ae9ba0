"""``toolspan fetch`` and ``toolspan find`` on Tempo (a recorded stand-in: Tempo's AGPL licence keeps it out
of the project; ``tests/server_fixtures/``), and every way they fail: one line naming the field or the URL,
and the exit status of the other commands. Against the real Jaeger: ``tests/e2e/test_jaeger_cli.py``."""

from __future__ import annotations

import http.server
import json
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.paths import TESTS
from toolspan.backends import RunQuery, Tempo, normal_trace_id
from toolspan.cli import main

FIXTURES = TESTS / "server_fixtures"
TRACE = "0af7651916cd43dd8448eb211c80319c"  # tempo_v2_trace.json
OTHER = "1c2d3e4f5a6b7c8d9e0fa1b2c3d4e5f6"  # listed by tempo_search.json, not held


@dataclass
class StandIn:
    """A local HTTP server answering with recorded responses; what it was asked, with the headers."""

    url: str
    asked: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    routes: dict[str, tuple[int, bytes]] = field(default_factory=dict)

    def paths(self) -> list[str]:
        return [path for path, _ in self.asked]


@pytest.fixture
def tempo() -> Iterator[StandIn]:
    stand_in = StandIn("")
    stand_in.routes = {
        f"/api/v2/traces/{TRACE}": (200, (FIXTURES / "tempo_v2_trace.json").read_bytes()),
        "/api/search": (200, (FIXTURES / "tempo_search.json").read_bytes()),
    }

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            stand_in.asked.append((self.path, dict(self.headers)))
            status, body = stand_in.routes.get(
                urllib.parse.urlsplit(self.path).path, (404, b"trace not found")
            )
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    stand_in.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield stand_in
    finally:
        httpd.shutdown()
        httpd.server_close()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_fetch_reads_a_run_from_tempo_as_convert_reads_the_same_response(
    capsys: pytest.CaptureFixture[str], tempo: StandIn
) -> None:
    code, out, err = run(capsys, "fetch", TRACE.upper(), "--tempo", tempo.url, "--to", "tree")
    assert (code, err) == (0, "")
    assert tempo.paths() == [f"/api/v2/traces/{TRACE}"]
    converted = run(capsys, "convert", str(FIXTURES / "tempo_v2_trace.json"), "--to", "tree")
    assert converted[0] == 0
    assert json.loads(out) == json.loads(converted[1])
    assert json.loads(out)["job_id"] == TRACE


def test_fetch_sends_the_given_headers(capsys: pytest.CaptureFixture[str], tempo: StandIn) -> None:
    code, _, _ = run(
        capsys,
        "fetch",
        TRACE,
        "--tempo",
        tempo.url,
        "--to",
        "events",
        "--header",
        "Authorization: Bearer s3cret",
    )
    assert code == 0
    assert tempo.asked[0][1]["Authorization"] == "Bearer s3cret"


def test_find_asks_tempos_search_with_traceql_and_lists_the_runs_newest_first(
    capsys: pytest.CaptureFixture[str], tempo: StandIn
) -> None:
    code, out, err = run(
        capsys,
        "find",
        "--tempo",
        tempo.url,
        "--service",
        "weather-agent",
        "--tool",
        "get_weather",
        "--start",
        "2025-11-23T12:00:00Z",
        "--end",
        "1763913600.5",
        "--limit",
        "5",
    )
    assert (code, err) == (0, "")
    ((path, _),) = tempo.asked
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
    assert query == {
        "q": ['{ resource.service.name = "weather-agent" && span.gen_ai.tool.name = "get_weather" }'],
        "start": ["1763899200"],
        "end": ["1763913601"],
        "limit": ["5"],
    }
    runs = [json.loads(line) for line in out.splitlines()]
    assert runs == [
        {
            "trace_id": OTHER,
            "service": "weather-agent",
            "name": "invoke_agent forecaster",
            "started_at": "2025-11-23T12:14:20.000000Z",
            "duration_ms": 1200,
            "spans": None,
            "tools": ["get_weather"],
        },
        {
            "trace_id": TRACE,  # Tempo drops the leading zero: padded back to 32 hex digits
            "service": "weather-agent",
            "name": "invoke_agent forecaster",
            "started_at": "2025-11-23T12:13:20.000000Z",
            "duration_ms": 900,
            "spans": None,
            "tools": ["get_weather"],
        },
    ]


def test_traceql_quotes_what_it_is_given() -> None:
    query = RunQuery(start_ns=0, end_ns=1, service='we"ird\\name', tool=None)
    assert Tempo.traceql(query) == '{ resource.service.name = "we\\"ird\\\\name" }'
    assert Tempo.traceql(RunQuery(start_ns=0, end_ns=1)) == "{}"


def test_find_converts_what_it_found_and_names_the_run_it_could_not_read(
    capsys: pytest.CaptureFixture[str], tempo: StandIn, tmp_path: Path
) -> None:
    out = tmp_path / "trees.json"
    code, stdout, err = run(
        capsys, "find", "--tempo", tempo.url, "--since", "30d", "--to", "tree", "-o", str(out)
    )
    assert code == 1
    assert stdout == ""
    assert err == f"toolspan: error: trace {OTHER}: not found in Tempo at {tempo.url}\n"
    assert tempo.paths()[1:] == [f"/api/v2/traces/{OTHER}", f"/api/v2/traces/{TRACE}"]
    assert json.loads(out.read_text("utf-8"))["job_id"] == TRACE


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (500, b"too many outstanding requests\nmore", "HTTP 500: too many outstanding requests"),
        (503, b"", "HTTP 503"),
    ],
)
def test_a_backend_error_is_one_line_naming_the_url_and_exits_1(
    capsys: pytest.CaptureFixture[str], tempo: StandIn, status: int, body: bytes, message: str
) -> None:
    tempo.routes[f"/api/v2/traces/{TRACE}"] = (status, body)
    code, out, err = run(capsys, "fetch", TRACE, "--tempo", tempo.url, "--to", "tree")
    assert (code, out) == (1, "")
    assert err == f"toolspan: error: {tempo.url}/api/v2/traces/{TRACE}: {message}\n"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--service", "nosuch"], "no runs of service 'nosuch' in the last hour"),
        (["--tool", "t", "--since", "90m"], "no runs calling tool 't' in the last 1.5 hours"),
        (["--since", "2d", "--to", "tree"], "no runs in the last 2 days"),
        (
            ["--service", "s", "--start", "2025-11-23T12:00:00Z", "--end", "2025-11-23T13:00:00Z"],
            "no runs of service 's' between 2025-11-23T12:00:00+00:00 and 2025-11-23T13:00:00+00:00",
        ),
    ],
)
def test_a_search_that_finds_nothing_says_what_it_asked_for_and_exits_1(
    capsys: pytest.CaptureFixture[str], tempo: StandIn, tmp_path: Path, args: list[str], said: str
) -> None:
    tempo.routes["/api/search"] = (200, b'{"traces": []}')
    out_file = tmp_path / "out.json"
    code, out, err = run(capsys, "find", "--tempo", tempo.url, *args, "-o", str(out_file))
    assert (code, out, err) == (1, "", f"toolspan find: {said}\n")
    assert not out_file.exists()


def test_a_search_answer_that_is_not_json_is_named(
    capsys: pytest.CaptureFixture[str], tempo: StandIn
) -> None:
    tempo.routes["/api/search"] = (200, b"<html>login</html>")
    code, out, err = run(capsys, "find", "--tempo", tempo.url)
    assert (code, out) == (1, "")
    assert err == f"toolspan: error: {tempo.url}/api/search: not JSON: '<html>login</html>'\n"


def test_a_trace_answer_the_bridge_cannot_read_is_named(
    capsys: pytest.CaptureFixture[str], tempo: StandIn
) -> None:
    tempo.routes[f"/api/v2/traces/{TRACE}"] = (200, b'{"hello": 1}')
    code, out, err = run(capsys, "fetch", TRACE, "--tempo", tempo.url, "--to", "tree")
    assert (code, out) == (1, "")
    where = f"{tempo.url}/api/v2/traces/{TRACE}"
    assert err == f"toolspan: error: {where}: not a trace document of a known format (keys: hello)\n"


def test_an_unreachable_backend_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, out, err = run(capsys, "find", "--jaeger", f"http://127.0.0.1:{port}")
    assert (code, out) == (1, "")
    assert err.startswith(f"toolspan: error: http://127.0.0.1:{port}/api/services: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["fetch", "xyz", "--jaeger", "http://h", "--to", "tree"],
            "argument TRACE_ID: expected a trace id of up",
        ),
        (["fetch", "0" * 32, "--jaeger", "http://h", "--to", "tree"], "the all-zero trace id is not a trace"),
        (
            ["fetch", "a" * 33, "--jaeger", "http://h", "--to", "tree"],
            "argument TRACE_ID: expected a trace id",
        ),
        (
            ["fetch", TRACE, "--jaeger", "ftp://h", "--to", "tree"],
            "argument --jaeger: expected an http:// or https",
        ),
        (["fetch", TRACE, "--jaeger", "http://h", "--tempo", "http://h", "--to", "tree"], "not allowed with"),
        (["fetch", TRACE, "--to", "tree"], "one of the arguments --jaeger --tempo is required"),
        (["fetch", TRACE, "--jaeger", "http://h"], "the following arguments are required: --to"),
        (
            ["find", "--tempo", "http://h", "--since", "soon"],
            "argument --since: expected a duration like 30m",
        ),
        (["find", "--tempo", "http://h", "--since", "0h"], "argument --since: expected a duration like 30m"),
        (
            ["find", "--tempo", "http://h", "--start", "yesterday"],
            "argument --start: expected an RFC 3339 time",
        ),
        (["find", "--tempo", "http://h", "--limit", "0"], "argument --limit: expected a number of 1..10000"),
        (
            ["find", "--tempo", "http://h", "--header", "no colon"],
            "argument --header: expected 'Name: value'",
        ),
        (["find", "--tempo", "http://h", "--timeout", "nan"], "argument --timeout: expected seconds of 0.1"),
        (["find", "--tempo", "http://h", "--api", "v2"], "argument --api: invalid choice: 'v2'"),
    ],
)
def test_bad_usage_is_one_line_naming_the_flag_and_exits_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert message in err.splitlines()[-1]


def test_a_time_range_that_ends_before_it_starts_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "find", "--tempo", "http://h", "--start", "2026-01-02", "--end", "2026-01-01"
    )
    assert (code, out, err) == (2, "", "toolspan find: error: --start must be before --end\n")


def test_trace_ids_are_read_as_jaeger_and_tempo_print_them() -> None:
    assert normal_trace_id("A1B2C3D4E5F60718") == "0000000000000000a1b2c3d4e5f60718"
    assert normal_trace_id(" af7651916cd43dd8448eb211c80319c ") == TRACE
    with pytest.raises(ValueError, match="up to 32 hex digits"):
        normal_trace_id("0x12")
