"""``toolspan fetch`` and ``toolspan find`` against a hostile backend (``tests.support.backend``: a real local
HTTP server): every class of answer that is slow (a trickled body or header), huge (over the cap, with or
without a ``Content-Length``; a header line past ``http.client``'s limit), cut off, deep, not JSON,
redirected (in a loop, off http(s)) or carrying impossible times, for every route the commands read. Each
ends in one line on stderr naming the URL and what was wrong, exit status 1, nothing on stdout, no
traceback. A redirect to another origin is followed without the ``--header`` credentials; the memory a large
answer costs is in proportion to its size."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

import pytest

from tests.support.backend import (
    Answer,
    Backend,
    backend_server,
    json_answer,
    redirect,
    trickled_body,
    trickled_headers,
)
from tests.support.paths import TESTS
from toolspan.backends import _client
from toolspan.cli import main

FIXTURES: Final = TESTS / "server_fixtures"
TEMPO_TRACE: Final = "0af7651916cd43dd8448eb211c80319c"
JAEGER_TRACE: Final = "f77950feed55c1ce91dd8e8789000001"
CAP: Final = 1 << 20  # the answer cap while these tests run (256 MiB in use)
# The client's deadline: every answer here but a trickle comes whole well within it. A trickle never comes
# whole, so a shorter deadline proves the same (the client gives up, says so, hangs up) sooner.
DEADLINE_S: Final = 0.5
TRICKLE_DEADLINE_S: Final = 0.2
HUNG_UP_WITHIN_S: Final = 30.0  # generous: the client gives up after its deadline

# Each command's arguments ({url}: the backend) and the path it reads.
COMMANDS: Final = {
    "fetch --tempo": (
        ["fetch", TEMPO_TRACE, "--tempo", "{url}", "--to", "tree"],
        f"/api/v2/traces/{TEMPO_TRACE}",
    ),
    "fetch --jaeger": (
        ["fetch", JAEGER_TRACE, "--jaeger", "{url}", "--to", "tree"],
        f"/api/v3/traces/{JAEGER_TRACE}",
    ),
    "fetch --jaeger --api v1": (
        ["fetch", JAEGER_TRACE, "--jaeger", "{url}", "--api", "v1", "--to", "tree"],
        f"/api/traces/{JAEGER_TRACE}",
    ),
    "find --tempo": (["find", "--tempo", "{url}"], "/api/search"),
    "find --jaeger (services)": (["find", "--jaeger", "{url}"], "/api/services"),
    "find --jaeger --service": (["find", "--jaeger", "{url}", "--service", "svc"], "/api/traces"),
}


def _deep(depth: int) -> bytes:
    return b'{"data": ' + b"[" * depth + b"]" * depth + b"}"


def _big_header(handler: object) -> None:
    wfile = handler.wfile  # type: ignore[attr-defined]
    wfile.write(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\nContent-Length: 2\r\n\r\n{}")


# Each class of hostile answer: how the backend answers (given its URL and the path) and what the one line
# says of it.
ANSWERS: Final[dict[str, tuple[Callable[[str, str], Answer], str]]] = {
    "trickled body": (lambda url, path: trickled_body(), f"no complete answer within {TRICKLE_DEADLINE_S} s"),
    "trickled headers": (
        lambda url, path: trickled_headers(),
        f"no complete answer within {TRICKLE_DEADLINE_S} s",
    ),
    "over the cap (Content-Length)": (
        lambda url, path: json_answer(b"{}", length=CAP + 1),
        f"answer over {CAP:,} bytes (Content-Length: {CAP + 1:,})",
    ),
    "over the cap (chunked)": (
        lambda url, path: json_answer(b"[" + b"1," * CAP + b"1]", chunked=True),
        f"answer over {CAP:,} bytes",
    ),
    "a header line past the limit": (lambda url, path: _big_header, "got more than 65536 bytes"),
    "cut off": (
        lambda url, path: json_answer(b'{"data": [', length=1000),
        "answer cut off after 10 bytes of 1,000",
    ),
    "100,000 deep": (lambda url, path: json_answer(_deep(100_000)), "JSON nested too deep to read"),
    "5,000 deep": (lambda url, path: json_answer(_deep(5_000)), "JSON nested too deep to read"),
    "not JSON": (lambda url, path: json_answer(b"<html>login</html>"), "not JSON: '<html>login</html>'"),
    "not text": (
        lambda url, path: json_answer(b'{"data": "\xff\xfe"}'),
        "not JSON: not UTF-8 text at byte 10",
    ),
    "a 5,000-digit number": (lambda url, path: json_answer(b'{"data": ' + b"9" * 5000 + b"}"), "not JSON"),
    "a JSON array (of paths)": (
        lambda url, path: json_answer(b'["/etc/passwd"]'),
        "expected a JSON object, got an array",
    ),
    "a JSON string (a path)": (
        lambda url, path: json_answer(b'"/etc/passwd"'),
        "expected a JSON object, got '/etc/passwd'",
    ),
    "a huge run of whitespace": (lambda url, path: json_answer(b" " * (CAP - 10) + b"{"), "not JSON"),
    "a redirect loop": (lambda url, path: redirect(url + path), "more than 5 redirects"),
    "a redirect to ftp": (lambda url, path: redirect("ftp://127.0.0.1/x"), "not an http:// or https:// URL"),
    "a redirect to a file": (
        lambda url, path: redirect("file:///etc/passwd"),
        "not an http:// or https:// URL",
    ),
}


@pytest.fixture
def backend(monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    monkeypatch.setattr(_client, "MAX_RESPONSE_BYTES", CAP)
    with backend_server() as server:
        yield server


def run(capsys: pytest.CaptureFixture[str], argv: list[str], url: str) -> tuple[int, str, str]:
    code = main([arg.replace("{url}", url) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line(err: str, where: str, says: str) -> None:
    assert err.count("\n") == 1, err
    assert err.endswith("\n"), err
    assert err.startswith(f"toolspan: error: {where}: "), err
    assert says in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", ANSWERS)
def test_a_hostile_answer_is_one_line_naming_the_url_and_what_was_wrong(
    capsys: pytest.CaptureFixture[str], backend: Backend, command: str, kind: str
) -> None:
    argv, path = COMMANDS[command]
    make, says = ANSWERS[kind]
    backend.answers[path] = make(backend.url, path)
    deadline = TRICKLE_DEADLINE_S if kind.startswith("trickled") else DEADLINE_S
    code, out, err = run(capsys, [*argv, "--timeout", str(deadline)], backend.url)
    assert (code, out) == (1, "")
    assert_one_line(err, backend.url + path, says)
    if kind.startswith("trickled"):
        # The client gave up at its deadline and closed the connection: the backend saw it go.
        assert backend.hung_up.wait(HUNG_UP_WITHIN_S)


# --- impossible times: past a double (1e400), past 64 bits (31 digits), negative ---------------------------

_BAD_TIMES: Final = ["1e400", "1" * 31, '"' + "1" * 31 + '"', "-1"]


def _tempo_trace(start: str) -> bytes:
    doc = json.loads((FIXTURES / "tempo_v2_trace.json").read_bytes())
    for scope in doc["trace"]["resourceSpans"][0]["scopeSpans"]:
        for span in scope["spans"]:
            span["startTimeUnixNano"] = "@"
    return json.dumps(doc).replace('"@"', start).encode()


def _jaeger_v3_trace(start: str) -> bytes:
    doc = json.loads((FIXTURES / "jaeger_v3_trace.json").read_bytes())
    for resource in doc["result"]["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                span["startTimeUnixNano"] = "@"
    return json.dumps(doc).replace('"@"', start).encode()


def _jaeger_v1(start: str) -> bytes:
    span = {
        "traceID": JAEGER_TRACE,
        "spanID": "00f067aa0ba902b7",
        "operationName": "execute_tool search",
        "references": [],
        "startTime": "@",
        "duration": 5,
        "tags": [],
        "processID": "p1",
    }
    trace = {
        "traceID": JAEGER_TRACE,
        "spans": [span],
        "processes": {"p1": {"serviceName": "svc", "tags": []}},
    }
    return json.dumps({"data": [trace]}).replace('"@"', start).encode()


def _tempo_search(start: str) -> bytes:
    found = {"traceID": TEMPO_TRACE, "rootServiceName": "svc", "startTimeUnixNano": "@", "durationMs": 5}
    return json.dumps({"traces": [found]}).replace('"@"', start).encode()


TIMED: Final = {
    "fetch --tempo": _tempo_trace,
    "fetch --jaeger": _jaeger_v3_trace,
    "fetch --jaeger --api v1": _jaeger_v1,
    "find --tempo": _tempo_search,
    "find --jaeger --service": _jaeger_v1,
}


@pytest.mark.parametrize("command", TIMED)
@pytest.mark.parametrize("start", _BAD_TIMES)
def test_an_impossible_start_time_is_one_line_naming_the_field(
    capsys: pytest.CaptureFixture[str], backend: Backend, command: str, start: str
) -> None:
    argv, path = COMMANDS[command]
    backend.answers[path] = json_answer(TIMED[command](start))
    code, out, err = run(capsys, argv, backend.url)
    assert (code, out) == (1, "")
    assert_one_line(err, backend.url + path, "tart")  # startTime, startTimeUnixNano: the field is named


# --- redirects ---------------------------------------------------------------------------------------------


@pytest.fixture
def elsewhere() -> Iterator[Backend]:
    """A second backend: another origin (another port of the same host)."""
    with backend_server() as server:
        yield server


def _tempo_answers(server: Backend) -> None:
    server.answers[f"/api/v2/traces/{TEMPO_TRACE}"] = json_answer(
        (FIXTURES / "tempo_v2_trace.json").read_bytes()
    )
    server.answers["/api/search"] = json_answer((FIXTURES / "tempo_search.json").read_bytes())


@pytest.mark.parametrize(
    ("argv", "path"),
    [
        (["fetch", TEMPO_TRACE, "--tempo", "{url}", "--to", "tree"], f"/api/v2/traces/{TEMPO_TRACE}"),
        (["find", "--tempo", "{url}", "--since", "3650d"], "/api/search"),
    ],
)
def test_a_redirect_to_another_origin_is_followed_without_the_given_headers(
    capsys: pytest.CaptureFixture[str], backend: Backend, elsewhere: Backend, argv: list[str], path: str
) -> None:
    _tempo_answers(elsewhere)
    backend.answers[path] = redirect(elsewhere.url + path, 307)
    headers = ["--header", "Authorization: Bearer s3cret", "--header", "X-Api-Key: k3y"]
    code, out, err = run(capsys, [*argv, *headers], backend.url)
    assert (code, err) == (0, "")
    assert out
    ((_, sent_here),) = backend.asked
    assert (sent_here["Authorization"], sent_here["X-Api-Key"]) == ("Bearer s3cret", "k3y")
    ((_, sent_there),) = elsewhere.asked
    assert "Authorization" not in sent_there
    assert "X-Api-Key" not in sent_there
    assert sent_there["Accept"] == "application/json"


def test_a_redirect_within_the_origin_keeps_the_given_headers(
    capsys: pytest.CaptureFixture[str], backend: Backend
) -> None:
    _tempo_answers(backend)
    path = f"/api/v2/traces/{TEMPO_TRACE}"
    answer = backend.answers.pop(path)
    backend.answers["/moved" + path] = answer
    backend.answers[path] = redirect("/moved" + path, 301)
    code, out, err = run(
        capsys,
        [
            "fetch",
            TEMPO_TRACE,
            "--tempo",
            "{url}",
            "--to",
            "tree",
            "--header",
            "Authorization: Bearer s3cret",
        ],
        backend.url,
    )
    assert (code, err) == (0, "")
    assert json.loads(out)["job_id"] == TEMPO_TRACE
    assert backend.paths() == [path, "/moved" + path]
    assert [headers["Authorization"] for _, headers in backend.asked] == ["Bearer s3cret"] * 2


# --- memory in proportion to the answer --------------------------------------------------------------------


def _large_tempo_trace(target: int) -> bytes:
    """A Tempo trace of many tool calls, about ``target`` bytes of compact JSON."""
    root = {
        "traceId": "CvdlGRbNQ92ESOshHIAxnA==",
        "spanId": "t61rcWkgMzE=",
        "name": "invoke_agent a",
        "startTimeUnixNano": "1763900000000000000",
        "endTimeUnixNano": "1763900009000000000",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}}],
    }
    spans = [root]
    size = 0
    while size < target:
        n = len(spans)
        span = {
            "traceId": root["traceId"],
            "spanId": n.to_bytes(8, "big").hex(),
            "parentSpanId": "b7ad6b7169203331",
            "name": "execute_tool get_weather",
            "startTimeUnixNano": str(1763900000100000000 + n),
            "endTimeUnixNano": str(1763900000600000000 + n),
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                {"key": "gen_ai.tool.name", "value": {"stringValue": "get_weather"}},
                {"key": "gen_ai.tool.call.id", "value": {"stringValue": f"call_{n}"}},
                {
                    "key": "gen_ai.tool.call.arguments",
                    "value": {"stringValue": json.dumps({"city": "Paris", "n": n})},
                },
            ],
        }
        size += len(json.dumps(span)) + 1
        spans.append(span)
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "weather-agent"}}]}
    doc = {"trace": {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": spans}]}]}}
    return json.dumps(doc, separators=(",", ":")).encode()


@pytest.mark.parametrize("chunked", [False, True], ids=["Content-Length", "chunked"])
def test_a_large_answer_costs_memory_in_proportion_to_its_size(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, chunked: bool
) -> None:
    body = _large_tempo_trace(4 << 20)
    with backend_server() as server:
        server.answers[f"/api/v2/traces/{TEMPO_TRACE}"] = json_answer(body, chunked=chunked)
        out = tmp_path / "trace.jsonl"
        tracemalloc.start()
        try:
            code = main(["fetch", TEMPO_TRACE, "--tempo", server.url, "--to", "events", "-o", str(out)])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert (code, capsys.readouterr().err) == (0, "")
    assert out.stat().st_size > 0
    # The answer is held once (bytes, then text, then the parsed document, then spans, each dropped for the
    # next): a few times its size, never the 20 times of reading it into bytes, copying it and parsing both.
    assert peak < 9 * len(body), f"{peak / len(body):.1f} times the answer"
