"""Smoke test of the demo command: ``python examples/demo_agent.py --out DIR`` in a real subprocess, and
``scripts/demo.sh`` itself (no reinstall once set up, a server that died noticed)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.support import terminal
from tests.support.paths import REPO
from toolspan.bridge.views import load_schema, match_observe

pytestmark = pytest.mark.processes

DEMO = REPO / "examples" / "demo_agent.py"

TOOL_CALLS = {  # call id -> tool name, as scripted in the demo
    "toolu_demo_01": "get_weather",
    "toolu_demo_02": "add",
    "toolu_demo_03": "research",
    "toolu_demo_sub_01": "search_notes",
    "toolu_demo_04": "delete_files",
}
VOLATILE = {"execution_id", "timestamp", "trace_id", "span_id", "duration_ms"}


def run_demo(out: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSPAN_"))}  # offline
    return subprocess.run(
        [sys.executable, str(DEMO), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("demo") / "out"  # not created yet: the demo makes it
    proc = run_demo(out)
    assert proc.returncode == 0, proc.stderr
    return out, proc.stdout


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def otlp_spans(out: Path) -> list[dict[str, Any]]:
    spans = []
    for request in read_jsonl(out / "traces.jsonl"):
        for resource_spans in request["resourceSpans"]:
            resource = {a["key"]: a["value"] for a in resource_spans["resource"]["attributes"]}
            assert resource["service.name"] == {"stringValue": "toolspan-demo"}
            for scope_spans in resource_spans["scopeSpans"]:
                for span in scope_spans["spans"]:
                    span["attrs"] = {
                        a["key"]: next(iter(a["value"].values())) for a in span.get("attributes", [])
                    }
                    spans.append(span)
    return spans


def test_writes_every_file(demo: tuple[Path, str]) -> None:
    out, _ = demo
    assert sorted(p.name for p in out.iterdir()) == [
        "events.jsonl",
        "plans.json",
        "run.html",
        "timeline.json",
        "traces.jsonl",
        "tree.json",
    ]


def test_writes_the_trace_page_and_prints_its_path(demo: tuple[Path, str]) -> None:
    out, stdout = demo
    assert stdout.splitlines()[-1] == f"trace page: {(out / 'run.html').resolve()}"
    html = (out / "run.html").read_text("utf-8")
    data = html.split('<script id="ts-data" type="application/json">', 1)[1].split("</script>", 1)[0]
    assert [page["title"] for page in json.loads(data)] == [
        "What's the weather in Paris and what is 25 + 30?",
        "Research OpenTelemetry for me, then clean up the scratch files.",
    ]


def test_prints_the_act_observe_timeline(demo: tuple[Path, str]) -> None:
    out, stdout = demo
    events = read_jsonl(out / "events.jsonl")
    lines = [line.split() for line in stdout.splitlines()]
    rows = [row for row in lines if len(row) > 1 and row[0].isdigit() and row[1] in ("act", "observe")]
    assert len(rows) == len(events) == 2 * len(TOOL_CALLS)
    for seq, (row, event) in enumerate(zip(rows, events, strict=True), 1):
        assert row[:5] == [
            str(seq),
            event["type"],
            event["tool_name"],
            event["call_id"],
            event["execution_id"],
        ]
    assert "assistant: It is 18 °C and cloudy in Paris, and 25 + 30 = 55." in stdout


def test_traces_are_otlp_json_with_the_span_contract(demo: tuple[Path, str]) -> None:
    out, _ = demo
    spans = otlp_spans(out)
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)
    assert sorted(by_name) == [
        "execute_tool add",
        "execute_tool delete_files",
        "execute_tool get_weather",
        "execute_tool research",
        "execute_tool search_notes",
        "invoke_agent assistant",
        "invoke_agent researcher",
        "plan research OpenTelemetry",
    ]
    assert len(by_name["invoke_agent assistant"]) == 2  # two turns
    for turn in by_name["invoke_agent assistant"]:
        assert turn["attrs"]["gen_ai.conversation.id"] == "conv-demo-0001"
        assert "parentSpanId" not in turn or not turn["parentSpanId"]
    tools = {s["attrs"]["gen_ai.tool.call.id"]: s for s in spans if s["name"].startswith("execute_tool ")}
    assert {k: s["attrs"]["gen_ai.tool.name"] for k, s in tools.items()} == TOOL_CALLS
    for call_id, span in tools.items():
        assert span["attrs"]["toolspan.tool_call_id"] == call_id
        assert span["attrs"]["toolspan.execution_id"] == "exec_" + span["spanId"]
    first_turn, second_turn = sorted(
        by_name["invoke_agent assistant"], key=lambda s: int(s["startTimeUnixNano"])
    )
    for call_id in ("toolu_demo_01", "toolu_demo_02"):  # run in parallel worker threads
        assert tools[call_id]["parentSpanId"] == first_turn["spanId"]
        assert tools[call_id]["traceId"] == first_turn["traceId"]
    for call_id in ("toolu_demo_03", "toolu_demo_04"):
        assert tools[call_id]["parentSpanId"] == second_turn["spanId"]
    assert tools["toolu_demo_04"]["attrs"]["toolspan.tool.state"] == "DENIED"
    assert [e["name"] for e in tools["toolu_demo_04"]["events"]] == [
        "toolspan.permission_required",
        "toolspan.permission_decided",
    ]
    # the sub-plan hangs under the research tool span and names it
    (plan,) = by_name["plan research OpenTelemetry"]
    research = tools["toolu_demo_03"]
    assert plan["parentSpanId"] == research["spanId"]
    assert plan["attrs"]["toolspan.parent.tool_call_id"] == "toolu_demo_03"
    assert plan["attrs"]["toolspan.parent.execution_id"] == "exec_" + research["spanId"]
    (researcher,) = by_name["invoke_agent researcher"]
    assert researcher["parentSpanId"] == plan["spanId"]
    assert tools["toolu_demo_sub_01"]["parentSpanId"] == researcher["spanId"]


def test_events_pair_act_and_observe_by_execution_id(demo: tuple[Path, str]) -> None:
    out, _ = demo
    events = read_jsonl(out / "events.jsonl")
    schema = load_schema("events")
    for event in events:
        jsonschema.validate(event, schema)
    pairs = match_observe(events)
    assert len(pairs) == len(TOOL_CALLS)
    observed: dict[str, dict[str, Any]] = {}
    for act, observe in pairs:
        assert observe is not None
        assert observe["execution_id"] == act["execution_id"]
        assert observe["call_id"] == act["call_id"]
        assert observe["tool_name"] == act["tool_name"] == TOOL_CALLS[act["call_id"]]
        observed[act["call_id"]] = {"input": act["tool_input"], **observe}
    assert len({o["execution_id"] for o in observed.values()}) == len(TOOL_CALLS)
    assert observed["toolu_demo_01"]["input"] == {"city": "Paris"}
    assert observed["toolu_demo_01"]["observation"] == {"city": "Paris", "temp_c": 18, "sky": "cloudy"}
    assert observed["toolu_demo_02"]["input"] == {"a": 25, "b": 30}
    assert observed["toolu_demo_02"]["observation"] == 55
    assert observed["toolu_demo_sub_01"]["observation"][0].startswith("OpenTelemetry is a CNCF project")
    assert observed["toolu_demo_03"]["observation"]["topic"] == "OpenTelemetry"
    denied = observed["toolu_demo_04"]
    assert (denied["is_error"], denied["state"]) == (True, "DENIED")
    assert "deleting files needs a human" in denied["observation"]["error"]
    for call_id, o in observed.items():
        if call_id != "toolu_demo_04":
            assert (o["is_error"], o["state"]) == (False, "COMPLETED")
    # the sub-plan's tool runs while research runs: research's act before, its observe after
    order = [(e["type"], e["call_id"]) for e in events]
    assert (
        order.index(("act", "toolu_demo_03"))
        < order.index(("act", "toolu_demo_sub_01"))
        < order.index(("observe", "toolu_demo_sub_01"))
        < order.index(("observe", "toolu_demo_03"))
    )


def test_timeline_is_one_conversation_of_two_turns(demo: tuple[Path, str]) -> None:
    out, _ = demo
    doc = json.loads((out / "timeline.json").read_text("utf-8"))
    jsonschema.validate(doc, load_schema("timeline"))
    assert doc["conversationId"] == "conv-demo-0001"
    items = doc["timeline"]
    assert doc["total"] == len(items)
    assert [i["sequenceNumber"] for i in items] == list(range(1, len(items) + 1))
    users = [i["content"] for i in items if i["type"] == "user_message"]
    assert users == [
        "What's the weather in Paris and what is 25 + 30?",
        "Research OpenTelemetry for me, then clean up the scratch files.",
    ]
    answers = [i["content"] for i in items if i["type"] == "assistant_message"]
    assert answers[0] == "It is 18 °C and cloudy in Paris, and 25 + 30 = 55."
    assert answers[-1].startswith("Research summary: OpenTelemetry is a CNCF project")
    thoughts = [i["content"] for i in items if i["type"] == "thought"]
    assert "I'll look up the weather and do the sum at the same time." in thoughts
    called = {i["call_id"] for i in items if i["type"] == "tool_call"}
    returned = {i["call_id"] for i in items if i["type"] == "tool_result"}
    assert called == returned == set(TOOL_CALLS)


def test_tree_and_plans_link_the_sub_plan_to_its_tool_call(demo: tuple[Path, str]) -> None:
    out, _ = demo
    trees = json.loads((out / "tree.json").read_text("utf-8"))
    assert len(trees) == 2  # one trace per turn
    for doc in trees:
        jsonschema.validate(doc, load_schema("tree"))

    def nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
        return [node, *(n for child in node["children"] for n in nodes(child))]

    second = nodes(trees[1]["execution_tree"])
    (research,) = [n for n in second if n["type"] == "tool" and n["tool_name"] == "research"]
    (plan,) = [n for n in second if n["type"] == "plan"]
    assert plan["parent_id"] == research["span_id"]
    assert plan in research["children"]
    assert [n["tool_name"] for n in nodes(plan) if n["type"] == "tool"] == ["search_notes"]
    assert {n["tool_name"] for n in nodes(trees[0]["execution_tree"]) if n["type"] == "tool"} == {
        "get_weather",
        "add",
    }

    plans = json.loads((out / "plans.json").read_text("utf-8"))
    jsonschema.validate(plans, load_schema("plans"))
    (sub,) = [p for p in plans["plans"] if p["toolCallId"] is not None]
    assert sub["toolCallId"] == "toolu_demo_03"
    assert sub["title"] == "research OpenTelemetry"
    parent_call = sub["parentActToolCall"]
    assert parent_call["toolCallId"] == "toolu_demo_03"
    assert parent_call["name"] == "research"
    assert json.loads(parent_call["parameters"]) == {"topic": "OpenTelemetry"}
    assert json.loads(parent_call["result"])["topic"] == "OpenTelemetry"


def test_content_is_the_same_on_every_run(demo: tuple[Path, str], tmp_path: Path) -> None:
    out, _ = demo
    again = run_demo(tmp_path / "again")
    assert again.returncode == 0, again.stderr

    def content(path: Path) -> list[str]:
        # the two parallel calls of turn 1 may interleave either way: compare as a sorted multiset
        events = read_jsonl(path / "events.jsonl")
        return sorted(
            json.dumps({k: v for k, v in e.items() if k not in VOLATILE}, sort_keys=True) for e in events
        )

    assert content(tmp_path / "again") == content(out)


# --- examples/demo_agent.py's usage, and scripts/demo.sh itself ------------------------------------------

ROOT = DEMO.parents[1]


def test_the_output_directory_is_positional_like_the_other_examples(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSPAN_"))}
    usage = subprocess.run(
        [sys.executable, str(DEMO), "--help"], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert usage.startswith("usage: demo_agent.py [-h] [--out OUT_DIR] [OUT_DIR]")
    assert "python examples/demo_agent.py [OUT_DIR]" in (DEMO.read_text("utf-8"))  # the docstring agrees
    done = subprocess.run(
        [sys.executable, str(DEMO), "out"], capture_output=True, text=True, env=env, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "run.html").is_file()
    both = subprocess.run(
        [sys.executable, str(DEMO), "a", "--out", "b"], capture_output=True, text=True, env=env, check=False
    )
    assert both.returncode == 2
    assert "give the output directory once" in both.stderr


def _checkout(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of what demo.sh reads, with a .venv whose python is this interpreter except for pip, which
    only records how it was called (a real install would change this test environment, and needs the
    network). Returns the checkout and pip's log."""
    repo = tmp_path / "repo"
    for name in ("scripts/demo.sh", "pyproject.toml", "constraints/test.txt", "examples/demo_agent.py"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes((ROOT / name).read_bytes())
    bin_dir = repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    log = tmp_path / "pip.log"
    python = bin_dir / "python"
    python.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "$*" >> "{log}"; exit 0; fi\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    (bin_dir / "toolspan").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m toolspan "$@"\n')
    for script in (python, bin_dir / "toolspan"):
        script.chmod(0o755)
    return repo, log


def _demo_sh(repo: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSPAN_", "PORT", "GRPC"))}
    return subprocess.run(
        ["bash", str(repo / "scripts" / "demo.sh"), *args],
        capture_output=True,
        text=True,
        env={**clean, "PIP_NO_INDEX": "1", **env},
        timeout=120,
        check=False,
    )


def test_demo_sh_installs_once_then_runs_offline(tmp_path: Path) -> None:
    repo, log = _checkout(tmp_path)
    first = _demo_sh(repo)
    assert first.returncode == 0, first.stderr
    installs = log.read_text().splitlines()
    assert installs == [
        "-m pip install -q -c constraints/test.txt --upgrade pip",
        "-m pip install -q -c constraints/test.txt -e .[threading]",
    ]
    assert "installing toolspan[threading] from this checkout" in first.stderr
    assert (repo / "demo-output" / "run.html").is_file()

    again = _demo_sh(repo)  # the second run asks no index: it works offline
    assert again.returncode == 0, again.stderr
    assert log.read_text().splitlines() == installs
    assert again.stderr == ""
    assert "user:      What's the weather in Paris" in again.stdout

    with (repo / "pyproject.toml").open("a") as pyproject:  # what decides the install changed
        pyproject.write("\n# a new dependency, say\n")
    third = _demo_sh(repo)
    assert third.returncode == 0, third.stderr
    assert len(log.read_text().splitlines()) == 4


def test_demo_sh_serve_notices_a_server_that_died(tmp_path: Path) -> None:
    repo, log = _checkout(tmp_path)
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        done = _demo_sh(repo, "--serve", PORT=str(port), GRPC_PORT="-1")
    finally:
        holder.close()
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == "demo: installing toolspan[threading,server] from this checkout into .venv (once)"
    assert lines[1].startswith(f"toolspan serve: error: port {port} on 127.0.0.1 (OTLP/HTTP and the API)")
    assert lines[1].endswith("choose another with --port N")
    assert lines[2].startswith("demo: toolspan serve exited (status 1) before it answered")
    assert len(lines) == 3
    assert not (repo / "demo-output" / "traces.jsonl").exists()  # the demo did not run against nothing
    assert (
        log.read_text().splitlines()[-1] == "-m pip install -q -c constraints/test.txt -e .[threading,server]"
    )


def test_demo_sh_serve_prints_this_run_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    """Run twice on one store: each run lists its own two runs (not every run the store kept), the list
    the browser opens shows them by name and state, and Ctrl-C stops the demo with status 0."""
    import json
    import urllib.request

    from tests.support.server import free_port

    repo, _log = _checkout(tmp_path)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSPAN_", "PORT", "GRPC"))}
    for attempt in (1, 2):
        # Its own process group (the script, its server and the demo), as a terminal's job.
        env = {**clean, "PORT": str(port), "GRPC_PORT": "-1"}
        proc = terminal.start(["bash", str(repo / "scripts" / "demo.sh"), "--serve"], env)
        try:
            assert proc.stdout is not None
            lines = []
            for line in proc.stdout:
                lines.append(line.rstrip("\n"))
                if line.startswith("Ctrl-C to stop."):
                    break
            assert (
                f"  runs    {base}/traces   (open it in a browser: every run, each with its live trace page)"
                in lines
            )
            assert f"  inbox   {base}/inbox    (tool calls waiting for a decision)" in lines
            at = lines.index("This demo's runs:")
            assert lines[at + 1] == "  What's the weather in Paris and what is 25 + 30?"
            assert lines[at + 2].startswith(f"    COMPLETED, 2 tool calls   page {base}/traces/")
            assert lines[at + 3] == "  Research OpenTelemetry for me, then clean up the scratch files."
            assert lines[at + 4].startswith(f"    DENIED, 3 tool calls   page {base}/traces/")
            assert lines[at + 5].startswith("API: ")  # this run's two, however many the store holds
            with urllib.request.urlopen(f"{base}/api/traces", timeout=10) as response:
                stored = json.load(response)["traces"]
            assert len(stored) == 2 * attempt
            with urllib.request.urlopen(f"{base}/", timeout=10) as response:  # / leads to the list page
                assert response.url == f"{base}/traces"
            terminal.ctrl_c(proc)
            assert proc.wait(30) == 0
        finally:
            terminal.stop(proc)
