"""Smoke tests of the gallery: each ``examples/*.py`` runs offline in a real subprocess, and what it
produced (trace files, converted views, printed answers) holds the expected spans with the model's ids
and the right parents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.installs import distribution, import_groups, installed_by, third_party
from tests.support.paths import REPO, TESTS
from toolspan.bridge.model import Span
from toolspan.bridge.readers import read_spans

EXAMPLES = REPO / "examples"
REPO_NODE = TESTS / "node"
WEATHER = {"city": "Paris", "temp_c": 18, "sky": "cloudy"}
ANSWER = 'Here is what the tools said: {"city": "Paris", "temp_c": 18, "sky": "cloudy"}; 55'
OFFLINE_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


def run_example(name: str, out: Path, cwd: Path | None = None) -> list[str]:
    """Run ``examples/<name>.py OUT`` offline (no OTLP endpoint, no model key) in ``cwd``; its stdout
    lines."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_", "TOOLSPAN_", "OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_"))
    }
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py"), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
        cwd=cwd,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def tool_attrs(
    span: Span, name: str, call_id: str, arguments: Any, result: Any, description: str
) -> dict[str, Any]:
    """The whole attribute dict of a completed tool span with the model's call id."""
    args, res = json.dumps(arguments), json.dumps(result)
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": description,
        "openinference.span.kind": "TOOL",
        "tool.name": name,
        "tool.description": description,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.call.arguments": args,
        "input.value": args,
        "input.mime_type": "application/json",
        "toolspan.execution_id": "exec_" + span.span_id,
        "toolspan.tool_call_id": call_id,
        "toolspan.tool.state": "COMPLETED",
        "gen_ai.tool.call.result": res,
        "output.value": res,
        "output.mime_type": "application/json",
    }


def by_name(spans: list[Span]) -> dict[str, list[Span]]:
    found: dict[str, list[Span]] = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


@pytest.mark.processes
@pytest.mark.parametrize(
    ("example", "weather_id", "add_id", "model_spans"),
    [
        ("openai_chat_loop", "call_offline_1", "call_offline_2", None),
        ("openai_responses_loop", "call_offline_1", "call_offline_2", None),
        ("anthropic_loop", "toolu_offline_1", "toolu_offline_2", "anthropic.messages.create"),
        ("gemini_loop", "fc_offline_1", "fc_offline_2", None),
    ],
)
def test_sdk_loop_examples(
    tmp_path: Path, example: str, weather_id: str, add_id: str, model_spans: str | None
) -> None:
    stdout = run_example(example, tmp_path)
    answer = ANSWER
    weather, added = json.dumps(WEATHER), "55"
    if example == "gemini_loop":  # the scripted model quotes the function_response objects
        answer = 'Here is what the tools said: {"output": ' + json.dumps(WEATHER) + '}; {"output": 55}'
        weather, added = '{"output": ' + weather + "}", '{"output": 55}'
    # Each turn of the loop, then the answer: what the model asked for, what each tool answered.
    assert stdout == [
        "user: What's the weather in Paris, and what is 25 + 30?",
        f'  get_weather({{"city": "Paris"}}) -> {weather}',
        f'  add({{"a": 25, "b": 30}}) -> {added}',
        f"assistant: {answer}",
        f"trace: {tmp_path / 'traces.jsonl'}",
    ]

    spans, _report = read_spans(tmp_path / "traces.jsonl")
    names = by_name(spans)
    expected_names = {"invoke_agent assistant", "execute_tool get_weather", "execute_tool add"}
    if model_spans:  # the anthropic client traces its own API calls: one per loop turn
        expected_names.add(model_spans)
    assert set(names) == expected_names
    (agent,) = names["invoke_agent assistant"]
    (weather,) = names["execute_tool get_weather"]
    (added,) = names["execute_tool add"]
    assert agent.parent_span_id is None
    assert weather.attributes == tool_attrs(
        weather, "get_weather", weather_id, {"city": "Paris"}, WEATHER, "Current weather of a city."
    )
    assert added.attributes == tool_attrs(added, "add", add_id, {"a": 25, "b": 30}, 55, "Add two numbers.")
    others = [span for span in spans if span is not agent]
    assert {span.parent_span_id for span in others} == {agent.span_id}
    assert {span.trace_id for span in spans} == {agent.trace_id}
    assert json.loads(agent.attributes["gen_ai.output.messages"])[0]["parts"][0]["content"] == answer
    if model_spans:
        assert [span.attributes["gen_ai.response.id"] for span in names[model_spans]] == ["msg_offline"] * 2
        assert [span.kind for span in names[model_spans]] == ["CLIENT", "CLIENT"]


@pytest.mark.processes
def test_quickstart(tmp_path: Path) -> None:
    stdout = run_example("quickstart", tmp_path)
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_01QuickstartWeather",
        "content": '{"city": "Paris", "temp_c": 18}',
        "is_error": False,
    }
    assert stdout[0] == f"results for the model: {[result]}"

    spans, _ = read_spans(tmp_path / "traces.jsonl")
    assert sorted(span.name for span in spans) == ["execute_tool get_weather", "invoke_agent assistant"]
    tool = next(span for span in spans if span.name == "execute_tool get_weather")
    agent = next(span for span in spans if span is not tool)
    assert tool.parent_span_id == agent.span_id
    assert tool.resource["service.name"] == "my-agent"
    expected = tool_attrs(
        tool,
        "get_weather",
        "toolu_01QuickstartWeather",
        {"city": "Paris"},
        {"city": "Paris", "temp_c": 18},
        "",
    )
    del expected["gen_ai.tool.description"], expected["tool.description"]
    expected["gen_ai.tool.description"] = expected["tool.description"] = "Current weather of a city."
    assert tool.attributes == expected

    # What `toolspan convert --to events` wrote, and what the example printed of it.
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text("utf-8").splitlines()]
    assert [(e["type"], e["tool_name"], e["call_id"], e["execution_id"]) for e in events] == [
        ("act", "get_weather", "toolu_01QuickstartWeather", "exec_" + tool.span_id),
        ("observe", "get_weather", "toolu_01QuickstartWeather", "exec_" + tool.span_id),
    ]
    assert events[1]["observation"] == {"city": "Paris", "temp_c": 18}
    assert [json.loads(line) for line in stdout[1:3]] == events
    (timeline,) = json.loads((tmp_path / "timeline.json").read_text("utf-8"))
    assert timeline["conversationId"] == "conv-1"
    assert [item["type"] for item in timeline["timeline"]] == [
        "user_message",
        "thought",
        "tool_call",
        "tool_result",
        "assistant_message",
    ]


def tree_lines(node: dict[str, Any], depth: int = 0) -> list[str]:
    lines = [f"{'  ' * depth}{node.get('name') or node['type']}  (span {node['span_id']})"]
    for child in node.get("children", []):
        lines += tree_lines(child, depth + 1)
    return lines


@pytest.mark.processes
def test_threads_and_subplans(tmp_path: Path) -> None:
    stdout = run_example("threads_and_subplans", tmp_path)
    spans, _ = read_spans(tmp_path / "traces.jsonl")
    names = by_name(spans)
    (agent,) = names["invoke_agent assistant"]
    (research,) = names["execute_tool research"]
    (plan,) = names["plan research spans"]
    fetches = names["execute_tool fetch_page"]
    assert len(spans) == 7
    assert len(fetches) == 2
    tools = [names["execute_tool get_weather"][0], names["execute_tool add"][0], research]
    assert [span.attributes["toolspan.tool_call_id"] for span in tools] == [
        "call_weather",
        "call_add",
        "call_research",
    ]
    assert {span.parent_span_id for span in tools} == {agent.span_id}
    assert plan.parent_span_id == research.span_id  # the sub-plan is a child of the tool that started it
    assert plan.attributes["toolspan.parent.tool_call_id"] == "call_research"
    assert plan.attributes["toolspan.parent.execution_id"] == "exec_" + research.span_id
    assert {span.parent_span_id for span in fetches} == {plan.span_id}  # across the plan's own threads
    assert json.loads(research.attributes["gen_ai.tool.call.result"]) == {"topic": "spans", "words": 16}

    # The printed tree is the execution tree written to tree.json, root first.
    tree = json.loads((tmp_path / "tree.json").read_text("utf-8"))
    assert stdout[:-1] == tree_lines(tree["execution_tree"])
    # The three calls run at once in a thread pool: siblings are in the order they started.
    subtree = {
        "execute_tool research": ["plan research spans", "execute_tool fetch_page", "execute_tool fetch_page"]
    }
    expected = ["job", "invoke_agent assistant"]
    for span in sorted(tools, key=lambda span: (span.start_ns, span.span_id)):
        expected += [span.name, *subtree.get(span.name, [])]
    assert [line.strip().split("  (")[0] for line in stdout[:-1]] == expected


@pytest.mark.processes
def test_cross_process(tmp_path: Path) -> None:
    stdout = run_example("cross_process", tmp_path)
    agent_spans, _ = read_spans(tmp_path / "traces.jsonl")
    worker_spans, _ = read_spans(tmp_path / "worker-traces.jsonl")
    (agent,) = [s for s in agent_spans if s.name == "invoke_agent assistant"]
    (tool,) = [s for s in agent_spans if s.name == "execute_tool summarize_remote"]
    (plan,) = [s for s in worker_spans if s.name == "plan summarize"]
    (count,) = [s for s in worker_spans if s.name == "execute_tool count_words"]
    assert len(agent_spans) == 2
    assert len(worker_spans) == 2
    assert tool.attributes["toolspan.tool_call_id"] == "toolu_01Summarize"
    assert tool.parent_span_id == agent.span_id
    # The worker's sub-plan continues the caller's trace, under the tool span, from another process.
    assert plan.trace_id == count.trace_id == agent.trace_id
    assert plan.parent_span_id == tool.span_id
    assert count.parent_span_id == plan.span_id
    assert plan.attributes["toolspan.parent.tool_call_id"] == "toolu_01Summarize"
    assert plan.attributes["toolspan.parent.execution_id"] == "exec_" + tool.span_id
    assert plan.resource["service.name"] == "summarizer-worker"
    assert agent.resource["service.name"] == "cross-process-agent"
    result = json.loads(tool.attributes["gen_ai.tool.call.result"])
    assert result["words"] == 11
    assert isinstance(result["pid"], int)  # the worker's pid, as it reported it
    assert [line.split("  (")[0] for line in stdout[1:6]] == [
        "job",
        "  invoke_agent assistant",
        "    execute_tool summarize_remote",
        "      plan summarize",
        "        execute_tool count_words",
    ]


@pytest.mark.processes
def test_existing_provider(tmp_path: Path) -> None:
    stdout = run_example("existing_provider", tmp_path)
    assert stdout[0].startswith(
        "toolspan kept the application's provider, resource and sampler (ParentBased{"
    )
    spans = [json.loads(line) for line in (tmp_path / "app-spans.jsonl").read_text("utf-8").splitlines()]
    assert sorted(span["name"] for span in spans) == ["POST /chat", "execute_tool lookup_order"]  # no health
    request = next(span for span in spans if span["name"] == "POST /chat")
    tool = next(span for span in spans if span["name"] == "execute_tool lookup_order")
    assert tool["parent_id"] == request["context"]["span_id"]
    assert tool["context"]["trace_id"] == request["context"]["trace_id"]
    for span in spans:  # the application's resource, untouched (configure's service_name is ignored)
        assert span["resource"]["attributes"]["service.name"] == "shop-backend"
        assert span["resource"]["attributes"]["deployment.environment"] == "staging"
    assert tool["attributes"]["toolspan.tool_call_id"] == "toolu_01Order"
    assert tool["attributes"]["gen_ai.tool.call.result"] == '{"order_id": "A-17", "status": "shipped"}'


@pytest.mark.processes
def test_replay_in_pytest(tmp_path: Path) -> None:
    # A relative output directory, as a user types it: the example must not depend on its own cwd.
    stdout = run_example("replay_in_pytest", Path("out"), cwd=tmp_path)
    tmp_path = tmp_path / "out"
    result = '{"to": "ada@example.org", "status": "queued"}'
    assert stdout[:3] == [f"recorded: {result}", f"replayed: {result}", "same results: True"]
    assert stdout[3].startswith("pytest: 1 passed")
    assert stdout[4] == "mails sent: 1"
    # The body ran once (the recording); the replay and the pytest test were served.
    assert (tmp_path / "outbox.txt").read_text("utf-8") == "to ada@example.org\n"
    spans, _ = read_spans(tmp_path / "run.jsonl")
    tools = [span for span in spans if span.name == "execute_tool send_email"]
    assert len(tools) == 2  # the recorded call, and the replayed one (same provider)
    recorded = next(span for span in tools if "toolspan.replay.served" not in span.attributes)
    served = next(span for span in tools if span is not recorded)
    assert recorded.attributes["toolspan.tool_call_id"] == "toolu_mail"
    assert recorded.attributes["gen_ai.tool.call.result"] == result
    assert served.attributes["toolspan.replay.served"] is True
    assert served.attributes["toolspan.replay.source.execution_id"] == "exec_" + recorded.span_id
    assert served.trace_id != recorded.trace_id


@pytest.mark.processes
def test_policy_in_ci(tmp_path: Path) -> None:
    stdout = run_example("policy_in_ci", tmp_path)
    spans, _ = read_spans(tmp_path / "run.jsonl")
    shells = sorted(
        (span for span in spans if span.name == "execute_tool run_shell"), key=lambda span: span.start_ns
    )
    assert [span.attributes["toolspan.tool.state"] for span in shells] == ["COMPLETED", "DENIED"]
    recorded, denied = shells
    # The audit (run before the live part) found the recorded call and exited 1.
    assert stdout[0] == (
        f"VIOLATION no-shell: trace={recorded.trace_id} span={recorded.span_id} exec=exec_{recorded.span_id}"
        " tool=run_shell agent=ops: tool 'run_shell' is denied"
    )
    assert (
        stdout[1]
        == "policy ci-gate version 1: 2 tool call(s) in 1 trace(s): 1 violation(s), 0 denied, 0 unchecked"
    )
    assert stdout[2] == "audit exit status: 1"
    # Live, the same rule denied the call before its body ran.
    assert json.loads(stdout[3].removeprefix("live result for run_shell: ")) == {
        "role": "tool",
        "tool_call_id": "call_sh",
        "content": "PermissionDenied: policy ci-gate rule no-shell: tool 'run_shell' is denied",
    }
    assert stdout[4] == "shell commands run: ['make clean']"
    assert (tmp_path / "shell.log").read_text("utf-8") == "make clean\n"
    assert denied.attributes["toolspan.policy.id"] == "ci-gate"
    assert denied.attributes["toolspan.tool_call_id"] == "call_sh"
    assert "gen_ai.tool.call.result" not in denied.attributes


@pytest.mark.processes
def test_serve_with_page(tmp_path: Path) -> None:
    stdout = run_example("serve_with_page", tmp_path)
    listing = json.loads((tmp_path / "traces.json").read_text("utf-8"))
    (summary,) = listing["traces"]
    trace_id = summary["trace_id"]
    url = stdout[0].split()[3]
    assert url.startswith("http://127.0.0.1:")
    assert stdout == [
        f"toolspan serve at {url} holds the run 'Weather in Paris, and 25 + 30?':",
        "  COMPLETED, 2 tool calls, 0 errors, service served-agent",
        f"  list of runs  {url}/traces",
        f"  its page      {url}/traces/{trace_id} (HTTP 200)",
        f"  as JSON       {url}/api/traces?q={trace_id}",
        "the server stops with this example: run it with --keep to open these pages",
    ]
    expected = {
        "name": "Weather in Paris, and 25 + 30?",
        "root_name": "invoke_agent assistant",
        "service": "served-agent",
        "conversation_id": "conv-serve",
        "spans": 3,
        "tool_calls": 2,
        "errors": 0,
        "state": "COMPLETED",
    }
    assert {k: summary[k] for k in expected} == expected
    assert (tmp_path / "toolspan.db").exists()
    log = (tmp_path / "server.log").read_text("utf-8")
    assert f"OTLP/HTTP {url}/v1/traces" in log  # the real server process received the spans


@pytest.mark.processes
def test_mcp_client_server(tmp_path: Path) -> None:
    stdout = run_example("mcp_client_server", tmp_path)
    trip = {"weather": {"city": "Paris", "temp_c": 18}, "hotel": {"city": "Paris", "nights": 2, "room": 101}}
    assert json.loads(stdout[0].removeprefix("result for the model: ")) == trip
    agent_spans, _ = read_spans(tmp_path / "traces.jsonl")
    server_spans, _ = read_spans(tmp_path / "server-traces.jsonl")
    (agent,) = [s for s in agent_spans if s.name == "invoke_agent travel_agent"]
    (call,) = [s for s in agent_spans if s.name == "execute_tool plan_trip"]
    (plan,) = [s for s in server_spans if s.name == "plan trip to Paris"]
    assert call.attributes["toolspan.tool_call_id"] == "toolu_trip"
    assert json.loads(call.attributes["gen_ai.tool.call.result"]) == trip
    # The server process continued the agent's trace (traceparent in the MCP request's _meta).
    assert plan.trace_id == call.trace_id == agent.trace_id
    assert plan.resource["service.name"] == "trips-mcp-server"
    assert call.resource["service.name"] == "travel-agent"

    # The printed tree: the MCP call once, the SDK's legs, the server's plan and tools under it.
    tree = json.loads((tmp_path / "tree.json").read_text("utf-8"))
    assert [line.split("  (")[0] for line in stdout[1:-1]] == [
        "job",
        "  invoke_agent travel_agent",
        "    execute_tool plan_trip",
        "      MCP send tools/call plan_trip",
        "        tools/call plan_trip",
        "          plan trip to Paris",
        "            execute_tool get_weather",
        "            execute_tool book_hotel",
        "      MCP send tools/list",
        "        tools/list",
    ]
    assert stdout[3] == "    execute_tool plan_trip  (tool, call toolu_trip)"
    assert len(stdout) == 12

    def tools(node: dict[str, Any]) -> list[str]:
        own = [node["tool_name"]] if node["type"] == "tool" else []
        return own + [name for child in node["children"] for name in tools(child)]

    root = tree["execution_tree"]
    assert tools(root) == ["plan_trip", "get_weather", "book_hotel"]  # the MCP call counted once
    (mcp_call,) = root["children"][0]["children"]
    assert mcp_call["span_id"] == call.span_id
    assert tools(mcp_call) == ["plan_trip", "get_weather", "book_hotel"]


# --- what the README's set-up installs is what the examples import ---------------------------------

SRC = REPO / "src" / "toolspan"
LOCAL = {p.stem for p in EXAMPLES.glob("*.py")}  # the examples' own modules (_offline, ...)


def _example_needs(path: Path) -> list[set[str]]:
    """Import groups of an example, with what it starts in subprocesses: ``-m pytest`` needs pytest;
    ``toolspan serve`` needs what toolspan.server imports (its PostgreSQL store only for such a URL)."""
    groups = import_groups(path)
    text = path.read_text("utf-8")
    if '"-m", "pytest"' in text:
        groups.append({"pytest"})
    if '"toolspan", "serve"' in text:
        for module in sorted(SRC.joinpath("server").rglob("*.py")):
            if module.name == "postgres.py" and "postgresql://" not in text:
                continue  # the PostgreSQL store (the postgres extra) loads for a postgresql:// --db only
            groups += import_groups(module)
    return groups


def test_the_examples_extra_installs_everything_the_examples_import() -> None:
    """`pip install ".[examples]"` (the README's set-up) brings every module the examples import or start:
    each third-party import of every example maps to a distribution in that install."""
    provided = installed_by({"examples"})
    assert {"openai", "anthropic", "google-genai", "mcp", "pytest", "starlette", "uvicorn"} <= provided
    missing = []
    checked = 0
    for path in sorted(EXAMPLES.glob("*.py")):
        for needs in _example_needs(path):
            group = {m for m in needs if third_party(m, LOCAL)}
            if not group:
                continue
            checked += 1
            dists = {distribution(m) for m in group} - {None}
            if not dists & provided:
                missing.append(f"{path.name}: {sorted(group)} -> {sorted(d for d in dists if d)}")
    assert checked >= 10
    assert missing == []


def test_the_examples_extra_holds_the_server_and_the_policy_extras() -> None:
    """serve_with_page.py and the control example start `toolspan serve`; policy_in_ci.py's policy has a
    pattern (RE2): after `pip install ".[examples]"` alone they run, not stop at an import or a pattern."""
    examples = installed_by({"examples"})
    assert installed_by({"server"}) <= examples, installed_by({"server"}) - examples
    assert installed_by({"policy"}) <= examples, installed_by({"policy"}) - examples
    assert "google-re2" in examples


def test_the_core_alone_does_not_cover_the_examples() -> None:
    """The check above can fail: without the extra, the SDK loops' imports are not installed."""
    provided = installed_by(set())
    assert "openai" not in provided
    assert distribution("openai") == "openai"
    assert distribution("google.genai") == "google-genai"


@pytest.mark.processes
def test_ag_ui_frontend(tmp_path: Path) -> None:
    stdout = run_example("ag_ui_frontend", tmp_path)
    if not (REPO_NODE / "node_modules" / "@ag-ui" / "client").is_dir():
        pytest.skip("Node clients not installed: run `npm ci` in tests/node (scripts/test.sh does)")
    assert stdout[0].startswith("conv-ag-ui via @ag-ui/client (")
    assert stdout[0].endswith(" events, error: None):")
    assert stdout[1] == "  user: Weather in Paris, and how many people live in Atlantis?"
    # The two lookups run at once in run_tool_calls' thread pool: the client lists them as they started.
    assert sorted(stdout[2:4]) == [
        '  tool get_population({"city":"Atlantis"}) -> ValueError: unknown city: Atlantis',
        '  tool get_weather({"city":"Paris"}) -> {"city":"Paris","temp_c":18}',
    ]
    assert stdout[4] == "  assistant: Paris: 18 C. I could not find Atlantis."
    framework = [line for line in stdout[5:] if line.startswith("  tool ")]
    assert [line.split("(")[0] for line in framework] == [
        "  tool get_weather",
        "  tool get_weather",
        "  tool get_population",
    ]
    live = json.loads((tmp_path / "ag-ui-conv-ag-ui.json").read_text("utf-8"))
    types = [e["type"] for e in live["events"]]
    assert types[0] == "RUN_STARTED"
    assert types[-1] == "RUN_FINISHED"
    assert "REASONING_MESSAGE_CONTENT" in types


def test_ag_ui_frontend_says_what_is_missing_when_the_client_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node.js installed but its packages not: the example says to run npm ci, not that there is no Node."""
    import importlib.util
    import shutil

    monkeypatch.syspath_prepend(str(EXAMPLES))  # as when run as a script: its sibling modules import
    spec = importlib.util.spec_from_file_location("ag_ui_frontend_example", EXAMPLES / "ag_ui_frontend.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.NODE_DIR = tmp_path  # a directory without node_modules
    if shutil.which("node") is None:
        assert module.why_no_client() == "no Node.js on PATH"
    else:
        assert (
            module.why_no_client()
            == f"Node.js is here, its packages are not: run (cd {tmp_path} && npm ci) once"
        )
    module.NODE_DIR = REPO_NODE
    if (REPO_NODE / "node_modules" / "@ag-ui" / "client").is_dir() and shutil.which("node"):
        assert module.why_no_client() is None


@pytest.mark.processes
def test_approve_through_server(tmp_path: Path) -> None:
    """The runnable example of the control channel: a real `toolspan serve --token --decider`, a real
    application gated by ServerApprover, a decider over HTTP; every call ends as decided."""
    stdout = run_example("approve_through_server", tmp_path)
    url = stdout[0].split()[3].rstrip(":")
    assert url.startswith("http://127.0.0.1:")
    assert stdout[1] == "user: Clear last year's releases, tell everyone, and watch the checkout deploy."
    assert stdout[2] == f"in the inbox ({url}/inbox):"
    assert stdout[3:6] == [
        '  delete_files({"path": "/srv/releases"}) from agent ops-assistant, waiting',
        '  send_email({"to": "everyone@example.org"}) from agent ops-assistant, waiting',
        '  watch_deploy({"service": "checkout"}) from agent ops-assistant, waiting',
    ]
    assert stdout[6].startswith("the application's token may not decide: 403 (")
    assert stdout[7:11] == [
        'ops allows delete_files with {"path": "/srv/releases/2023"}: 200, by ops',
        "ops denies send_email: 200, by ops",
        "ops allows watch_deploy: 200, by ops",
        "ops cancels watch_deploy while it runs: 202, by ops",
    ]
    assert stdout[11:15] == [
        "the model gets back:",
        '  delete_files -> {"deleted": "/srv/releases/2023"}',
        "  send_email -> PermissionDenied: not to everyone",
        "  watch_deploy -> ToolCancelled: taking too long",
    ]
    assert stdout[15] == (
        'the run "Clear last year\'s releases, tell everyone, and watch the checkout deploy.": CANCELLED;'
        ' its calls: {"delete_files": "COMPLETED", "send_email": "DENIED", "watch_deploy": "CANCELLED"}'
    )
    assert stdout[16].startswith(f"its page: {url}/traces/")
    assert stdout[17:] == ["the server stops with this example: run it with --keep to open these pages"]
    (run,) = json.loads((tmp_path / "traces.json").read_text("utf-8"))["traces"]
    assert (run["state"], run["denied"], run["cancelled"], run["errors"]) == ("CANCELLED", 1, 1, 0)
