"""``toolspan fetch`` and ``toolspan find`` against the real Jaeger: a run read by trace id gives exactly what
``toolspan convert`` gives from the application's own file of it; runs are found by service, tool name and
time range through Jaeger's search API, and converted all at once (with the progress bar)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.otel_stack import Jaeger, app_env
from toolspan.bridge.readers import read_spans
from toolspan.bridge.views import VIEWS

pytestmark = [pytest.mark.e2e, pytest.mark.processes]

APP = Path(__file__).with_name("shipping_app.py")
REPO = Path(__file__).resolve().parents[2]


def toolspan(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "toolspan", *args],
        env={k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSPAN_"))},
        capture_output=True,
        timeout=120,
        check=False,
    )
    # Decoded as is: a progress bar's carriage returns stay (text=True would turn them into line feeds).
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


@pytest.fixture(scope="module")
def shipped(jaeger: Jaeger, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One rich run and three small ones of a service of this module's own, in Jaeger, and the SDK's file."""
    work = tmp_path_factory.mktemp("cli")
    service = f"cli-e2e-{uuid.uuid4().hex[:8]}"
    sdk_file = work / "sdk.jsonl"
    env = app_env(
        f"http://127.0.0.1:{jaeger.otlp_grpc_port}",
        "grpc",
        OTEL_SERVICE_NAME=service,
        OTEL_TRACES_EXPORTER="otlp,toolspan_otlp_file",
        TOOLSPAN_OTLP_FILE=str(sdk_file),
    )
    out = {"service": service, "sdk_file": sdk_file, "work": work}
    for args in (["run"], ["runs", "3"]):
        done = subprocess.run(
            [sys.executable, str(APP), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        out[args[0]] = json.loads(done.stdout.splitlines()[-1])
    jaeger.wait_for_trace(out["run"]["trace_id"], 8)
    for trace_id in out["runs"]["trace_ids"]:
        jaeger.wait_for_trace(trace_id, 3)
    return out


@pytest.mark.parametrize("view", ["tree", "events", "plans", "timeline"])
def test_fetch_reads_a_run_by_trace_id_as_the_bridge_converts_the_apps_own_spans(
    jaeger: Jaeger, shipped: dict[str, Any], view: str
) -> None:
    trace_id = shipped["run"]["trace_id"]
    fetched = toolspan("fetch", trace_id, "--jaeger", jaeger.url, "--to", view, "--sorted")
    assert (fetched.returncode, fetched.stderr) == (0, "")
    spans = [s for s in read_spans(str(shipped["sdk_file"]))[0] if s.trace_id == trace_id]
    assert len(spans) == 8
    expected = VIEWS[view].build(spans)
    if VIEWS[view].lines:
        assert [json.loads(line) for line in fetched.stdout.splitlines()] == json.loads(json.dumps(expected))
    else:
        assert json.loads(fetched.stdout) == json.loads(json.dumps(expected))


def test_fetch_with_api_v1_reads_the_same_tool_calls(jaeger: Jaeger, shipped: dict[str, Any]) -> None:
    trace_id = shipped["run"]["trace_id"]
    v1 = toolspan("fetch", trace_id, "--jaeger", jaeger.url, "--api", "v1", "--to", "events", "--sorted")
    v3 = toolspan("fetch", trace_id, "--jaeger", jaeger.url, "--to", "events", "--sorted")
    assert v1.returncode == v3.returncode == 0
    keys = ("type", "tool_name", "execution_id", "call_id", "status")
    pick = lambda out: [{k: e.get(k) for k in keys} for e in map(json.loads, out.splitlines())]  # noqa: E731
    assert pick(v1.stdout) == pick(v3.stdout)
    assert len(pick(v3.stdout)) == 10  # five tool calls, act and observe each


def test_fetch_says_which_trace_is_missing_and_still_writes_the_others(
    jaeger: Jaeger, shipped: dict[str, Any], tmp_path: Path
) -> None:
    trace_id = shipped["run"]["trace_id"]
    missing = "0123456789abcdef0123456789abcdef"
    out = tmp_path / "trees.json"
    done = toolspan("fetch", trace_id, missing, "--jaeger", jaeger.url, "--to", "tree", "-o", str(out))
    assert done.returncode == 1
    assert done.stderr == f"toolspan: error: trace {missing}: not found in Jaeger at {jaeger.url}\n"
    assert json.loads(out.read_text("utf-8"))["job_id"] == trace_id  # one trace: its document
    alone = toolspan("fetch", missing, "--jaeger", jaeger.url, "--to", "tree")
    assert (alone.returncode, alone.stdout) == (1, "")


def _runs(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_find_lists_the_runs_of_a_service_newest_first_with_their_tools(
    jaeger: Jaeger, shipped: dict[str, Any]
) -> None:
    done = toolspan("find", "--jaeger", jaeger.url, "--service", shipped["service"])
    assert (done.returncode, done.stderr) == (0, "")
    runs = _runs(done.stdout)
    small = shipped["runs"]["trace_ids"]
    run, ingest = shipped["run"]["trace_id"], shipped["run"]["link_trace_id"]
    assert [r["trace_id"] for r in runs] == [*reversed(small), run, ingest]
    assert {(r["service"], r["name"], r["spans"]) for r in runs[:3]} == {
        (shipped["service"], "invoke_agent worker", 3)
    }
    assert [r["tools"] for r in runs] == [["fetch", "search"]] * 3 + [
        ["divide", "fetch", "read_file", "research", "search"],
        [],
    ]
    assert [(r["name"], r["spans"]) for r in runs[3:]] == [("invoke_agent planner", 8), ("ingest", 1)]
    assert sorted(runs[0]) == ["duration_ms", "name", "service", "spans", "started_at", "tools", "trace_id"]


def test_find_by_tool_name_uses_jaegers_tag_search(jaeger: Jaeger, shipped: dict[str, Any]) -> None:
    by_tool = {
        tool: [r["trace_id"] for r in _runs(toolspan("find", "--jaeger", jaeger.url, "--tool", tool).stdout)]
        for tool in ("divide", "search", "no_such_tool")
    }
    assert shipped["run"]["trace_id"] in by_tool["divide"]
    assert not set(shipped["runs"]["trace_ids"]) & set(by_tool["divide"])
    assert set(shipped["runs"]["trace_ids"]) | {shipped["run"]["trace_id"]} <= set(by_tool["search"])
    assert by_tool["no_such_tool"] == []
    nothing = toolspan("find", "--jaeger", jaeger.url, "--tool", "no_such_tool")
    assert (nothing.returncode, nothing.stderr) == (
        1,
        "toolspan find: no runs calling tool 'no_such_tool' in the last hour\n",
    )


def test_find_keeps_to_the_time_range(jaeger: Jaeger, shipped: dict[str, Any]) -> None:
    service = shipped["service"]
    later = toolspan(
        "find",
        "--jaeger",
        jaeger.url,
        "--service",
        service,
        "--start",
        "2100-01-01T00:00:00Z",
        "--end",
        "2100-01-02",
    )
    assert (later.returncode, later.stdout) == (1, "")
    assert later.stderr == (
        f"toolspan find: no runs of service {service!r} between 2100-01-01T00:00:00+00:00"
        " and 2100-01-02T00:00:00+00:00\n"
    )
    long_ago = toolspan(
        "find", "--jaeger", jaeger.url, "--service", service, "--start", "2000-01-01", "--end", "2000-01-02"
    )
    assert (long_ago.returncode, long_ago.stdout) == (1, "")
    recent = _runs(
        toolspan("find", "--jaeger", jaeger.url, "--service", service, "--since", "2h", "--limit", "2").stdout
    )
    # Which runs a limited search gives is the backend's choice; toolspan lists them newest first.
    everything = {*shipped["runs"]["trace_ids"], shipped["run"]["trace_id"], shipped["run"]["link_trace_id"]}
    assert len(recent) == 2
    assert {r["trace_id"] for r in recent} <= everything
    assert recent[0]["started_at"] >= recent[1]["started_at"]


def test_find_converts_every_run_found_at_once_with_a_progress_bar(
    jaeger: Jaeger, shipped: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "events.jsonl"
    done = toolspan(
        "find",
        "--jaeger",
        jaeger.url,
        "--service",
        shipped["service"],
        "--to",
        "events",
        "-o",
        str(out),
        "--progress",
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.endswith("\r[##############################] 5/5 traces  18 spans\n")
    assert done.stderr.startswith("\r[######........................] 1/5 traces  ")
    events = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    per_trace: dict[str, int] = {}
    for event in events:
        per_trace[event["trace_id"]] = per_trace.get(event["trace_id"], 0) + 1
    assert per_trace == {shipped["run"]["trace_id"]: 10, **dict.fromkeys(shipped["runs"]["trace_ids"], 4)}
    run, ingest = shipped["run"]["trace_id"], shipped["run"]["link_trace_id"]
    order = [
        *reversed(shipped["runs"]["trace_ids"]),
        run,
    ]  # as found: newest first (the ingest run has no tool)
    assert list(dict.fromkeys(e["trace_id"] for e in events)) == order
    assert ingest not in per_trace


def test_the_jaeger_searches_of_the_guide_find_the_tool_calls(
    jaeger: Jaeger, shipped: dict[str, Any]
) -> None:
    """docs/shipping.md's tag searches (the Jaeger UI's Tags field, over the same API): a failed tool call,
    one call by execution id, one tool."""
    service, run = shipped["service"], shipped["run"]["trace_id"]
    spans = read_spans(jaeger.trace_v3(run))[0]
    divide = next(s for s in spans if s.name == "execute_tool divide")

    def found(tags: dict[str, str]) -> list[str]:
        doc = jaeger.get_json("/api/traces", service=service, tags=json.dumps(tags))
        return sorted(t["traceID"] for t in doc["data"])

    assert found({"gen_ai.tool.name": "divide", "error.type": "ZeroDivisionError"}) == [run]
    assert found({"gen_ai.tool.name": "search", "error.type": "ZeroDivisionError"}) == []
    # Measured on Jaeger v2's memory storage (2.12, as on 2.13): the tag error=true reads the text "true" as
    # the bool false and so finds the runs with a span of status OK (every fetch call sets OK), not the
    # failed ones.
    everything_ok = sorted([run, *shipped["runs"]["trace_ids"]])
    assert found({"error": "true"}) == everything_ok
    assert found({"gen_ai.tool.name": "divide", "error": "true"}) == []
    assert found({"toolspan.execution_id": divide.attributes["toolspan.execution_id"]}) == [run]
    assert found({"gen_ai.tool.name": "fetch"}) == sorted([run, *shipped["runs"]["trace_ids"]])
