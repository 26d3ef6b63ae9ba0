"""``toolspan serve --tempo/--jaeger`` over HTTP, in process (uvicorn in a thread), reading a trace it does
not hold from a hostile backend (``tests.support.backend``): every class of answer the CLI's suite covers
(``tests/backends/test_hostile.py``: slow, huge, cut off, deep, not JSON, redirected, impossible times), on
every route that reads one trace, and on the trace list (Jaeger's search). Each is a 502 whose message
names the backend's URL and what was wrong, never a 500; a trickling backend holds the request only until
the deadline (and sees the connection closed then); a trace neither backend holds is still a 404."""

from __future__ import annotations

import contextlib
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, Final

import pytest

from tests.backends.test_hostile import (
    ANSWERS,
    CAP,
    DEADLINE_S,
    HUNG_UP_WITHIN_S,
    JAEGER_TRACE,
    TEMPO_TRACE,
    TIMED,
    TRICKLE_DEADLINE_S,
)
from tests.support.backend import Backend, backend_server, json_answer, trickled_body
from tests.support.paths import TESTS
from tests.support.server import HOST, wait_for
from toolspan.backends import _client
from toolspan.server import ServerConfig, SqliteStore, build_app

# The routes that read one trace (a view, OTLP JSON, the page's data, a job's tree, the trace page).
ROUTES: Final = (
    "/api/traces/{id}/tree",
    "/api/traces/{id}/events",
    "/api/traces/{id}/otlp",
    "/api/traces/{id}/page",
    "/api/jobs/{id}/trace",
    "/traces/{id}",
)
# Where each backend is read from: (trace id, path, the backend's name in the message).
READS: Final = {
    "Tempo": (TEMPO_TRACE, f"/api/v2/traces/{TEMPO_TRACE}"),
    "Jaeger": (JAEGER_TRACE, f"/api/v3/traces/{JAEGER_TRACE}"),
}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[float, tuple[str, Backend]]]:
    """``toolspan serve --tempo URL --jaeger URL`` in process over an empty store, both backends the one
    hostile server (Tempo's and Jaeger's paths differ), for each backend deadline a test asks for: started
    once for the module (a test sets the answers it reads; the server keeps nothing a backend answers)."""
    import uvicorn

    started: dict[float, tuple[str, Backend]] = {}
    with pytest.MonkeyPatch.context() as patch, contextlib.ExitStack() as stack:
        patch.setattr(_client, "MAX_RESPONSE_BYTES", CAP)
        for deadline in (DEADLINE_S, TRICKLE_DEADLINE_S):
            backend = stack.enter_context(backend_server())
            db = str(tmp_path_factory.mktemp("serve") / "serve.db")
            config = ServerConfig(
                db=db,
                parse_workers=0,
                tempo_url=backend.url,
                jaeger_url=backend.url,
                backend_timeout_s=deadline,
            )
            starlette, _ = build_app(config, SqliteStore(db))
            server = uvicorn.Server(uvicorn.Config(starlette, host=HOST, port=0, log_level="critical"))
            thread = threading.Thread(target=server.run, daemon=True)
            thread.start()
            stack.callback(thread.join, 30)
            stack.callback(setattr, server, "should_exit", True)
            wait_for(lambda server=server: server.started, "uvicorn to start", 20)  # type: ignore[misc]
            port = server.servers[0].sockets[0].getsockname()[1]
            started[deadline] = (f"http://{HOST}:{port}", backend)
        yield started


@pytest.fixture
def serving(servers: dict[float, tuple[str, Backend]], request: pytest.FixtureRequest) -> tuple[str, Backend]:
    """The module's server whose answers come whole within ``DEADLINE_S`` (a test of a trickle, which never
    comes whole: ``TRICKLE_DEADLINE_S``), its backend answering nothing yet."""
    kind = getattr(request.node, "callspec", None) and request.node.callspec.params.get("kind", "")
    trickle = isinstance(kind, str) and kind.startswith("trickled")
    base, backend = servers[TRICKLE_DEADLINE_S if trickle else DEADLINE_S]
    backend.answers.clear()
    backend.asked.clear()
    backend.hung_up.clear()
    return base, backend


def get(url: str) -> tuple[int, Any]:
    """The status and the JSON of ``GET url`` (generous time: the server's own deadline is far shorter)."""
    try:
        with urllib.request.urlopen(url, timeout=60) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, json.loads(e.read())


@pytest.mark.parametrize(
    ("route", "which"), [(r, "Tempo" if i % 2 else "Jaeger") for i, r in enumerate(ROUTES)]
)
@pytest.mark.parametrize("kind", ANSWERS)
def test_a_hostile_backend_answer_is_a_502_naming_the_backend_and_what_was_wrong(
    serving: tuple[str, Backend], route: str, which: str, kind: str
) -> None:
    base, backend = serving
    trace_id, path = READS[which]
    make, says = ANSWERS[kind]
    backend.answers[path] = make(backend.url, path)
    status, body = get(base + route.format(id=trace_id))
    assert status == 502, body
    assert body["status"] == 502
    message = body["error"]
    assert "\n" not in message
    assert f"{which}: {backend.url}{path}: " in message
    assert says in message
    if kind.startswith("trickled"):
        assert backend.hung_up.wait(HUNG_UP_WITHIN_S)


@pytest.mark.parametrize("path", ["/api/services", "/api/traces"])
@pytest.mark.parametrize("kind", ANSWERS)
def test_a_hostile_answer_to_the_lists_search_is_a_502_naming_jaeger_and_what_was_wrong(
    serving: tuple[str, Backend], path: str, kind: str
) -> None:
    base, backend = serving
    backend.answers["/api/services"] = json_answer(b'{"data": ["agent-svc"]}')
    make, says = ANSWERS[kind]
    backend.answers[path] = make(backend.url, path)
    status, body = get(f"{base}/api/traces")
    assert (status, body["status"]) == (502, 502), body
    message = body["error"]
    assert "\n" not in message
    assert f"Jaeger: {backend.url}{path}: " in message
    assert says in message
    if kind.startswith("trickled"):
        assert backend.hung_up.wait(HUNG_UP_WITHIN_S)


def test_each_server_waits_for_a_backend_as_long_as_its_own_config_says(
    servers: dict[float, tuple[str, Backend]],
) -> None:
    # The deadline is the server's own (``ServerConfig.backend_timeout_s``), read as its app is built: two
    # servers in one process wait each its own.
    trace_id, path = READS["Tempo"]
    for deadline, (base, backend) in servers.items():
        backend.answers.clear()
        backend.hung_up.clear()
        backend.answers[path] = trickled_body()
        status, body = get(f"{base}/api/traces/{trace_id}/tree")
        assert status == 502, body
        assert f"Tempo: {backend.url}{path}: no complete answer within {deadline} s" in body["error"]
        assert backend.hung_up.wait(HUNG_UP_WITHIN_S)
        backend.answers.clear()


@pytest.mark.parametrize("start", ["1e400", "1" * 31, "-1"])
@pytest.mark.parametrize("which", READS)
def test_an_impossible_start_time_is_a_502_naming_the_field(
    serving: tuple[str, Backend], which: str, start: str
) -> None:
    base, backend = serving
    trace_id, path = READS[which]
    backend.answers[path] = json_answer(
        TIMED["fetch --tempo" if which == "Tempo" else "fetch --jaeger"](start)
    )
    status, body = get(f"{base}/api/traces/{trace_id}/tree")
    assert status == 502, body
    assert f"{which}: {backend.url}{path}: " in body["error"]
    assert "startTimeUnixNano" in body["error"]


def test_a_trace_neither_backend_holds_is_404_and_one_backend_failing_is_not_fatal(
    serving: tuple[str, Backend],
) -> None:
    base, backend = serving
    missing = "ab" * 16
    status, body = get(f"{base}/api/traces/{missing}/tree")
    assert (status, body["status"]) == (404, 404)
    # Tempo fails, Jaeger holds the trace: the trace is served.
    backend.answers[f"/api/v2/traces/{JAEGER_TRACE}"] = json_answer(b"<html>busy</html>", 200)
    backend.answers[f"/api/v3/traces/{JAEGER_TRACE}"] = json_answer(
        (TESTS / "server_fixtures" / "jaeger_v3_trace.json").read_bytes()
    )
    status, tree = get(f"{base}/api/traces/{JAEGER_TRACE}/tree")
    assert status == 200
    assert json.loads(tree)["job_id"] == JAEGER_TRACE
