"""An agent watched through toolspan serve's AG-UI endpoint by the real ``@ag-ui/client``, as an AG-UI
frontend (CopilotKit, any ``HttpAgent``) would watch it: from its spans, with no AG-UI code in the agent.

    python examples/ag_ui_frontend.py [OUT_DIR]

What it shows: the example starts ``python -m toolspan serve`` (free ports on 127.0.0.1), then

1. starts the ``@ag-ui/client`` ``HttpAgent`` (Node, ``tests/node``: ``npm ci`` there first) against
   ``POST /api/ag-ui`` with ``threadId`` = the conversation ``conv-ag-ui``, *before* the agent runs; then
   runs a toolspan agent exporting to the server by the standard OTLP variables, with pending records of
   every span (``TOOLSPAN_PENDING_SPANS=all``) so its run, its thought and each tool are on
   the stream while they run. The client streams the run live and ends when the conversation is done;
2. sends the server a trace recorded from a framework, the OpenAI Agents SDK with its OpenInference
   instrumentation (``tests/corpus/openai_agents``), and runs the client on that conversation: a framework
   with no AG-UI adapter, shown in an AG-UI frontend from its traces.

What to look at: the printed messages the client reconstructed (the user's question, each tool call with
its arguments and result or error, the answer), and ``OUT_DIR/ag-ui-<thread>.json`` (all of it). Without
Node it prints the events of ``GET /api/conversations/{id}/ag-ui/stream`` instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from serve_with_page import fetch, start_server

import toolspan

REPO = Path(__file__).resolve().parent.parent
NODE_DIR = REPO / "tests" / "node"
FRAMEWORK_TRACE = REPO / "tests" / "corpus" / "openai_agents" / "traces.pb"
THREAD = "conv-ag-ui"


@toolspan.tool
def get_weather(city: str) -> dict[str, Any]:
    """Current weather of a city."""
    return {"city": city, "temp_c": 18}


@toolspan.tool
def get_population(city: str) -> int:
    """Population of a city."""
    raise ValueError(f"unknown city: {city}")


def run_agent() -> None:
    calls = [
        {"type": "tool_use", "id": "toolu_weather", "name": "get_weather", "input": {"city": "Paris"}},
        {
            "type": "tool_use",
            "id": "toolu_population",
            "name": "get_population",
            "input": {"city": "Atlantis"},
        },
    ]
    question = "Weather in Paris, and how many people live in Atlantis?"
    with toolspan.agent("assistant", input=question, conversation_id=THREAD) as run:
        toolspan.thought("Two lookups; they can run in parallel.")
        toolspan.run_tool_calls(calls, [get_weather, get_population])
        run.set_output("Paris: 18 C. I could not find Atlantis.")


def why_no_client() -> str | None:
    """Why the real @ag-ui/client cannot run here (``None`` when it can)."""
    if shutil.which("node") is None:
        return "no Node.js on PATH"
    if not (NODE_DIR / "node_modules" / "@ag-ui" / "client").is_dir():
        return f"Node.js is here, its packages are not: run (cd {NODE_DIR} && npm ci) once"
    return None


def client(url: str, thread: str) -> subprocess.Popen[bytes] | None:
    """The real @ag-ui/client running the thread (None without Node and its packages)."""
    node = shutil.which("node")
    if node is None or why_no_client() is not None:
        return None
    script = NODE_DIR / "ag_ui_run.mjs"
    return subprocess.Popen(
        [node, str(script), f"{url}/api/ag-ui", thread], stdout=subprocess.PIPE, cwd=NODE_DIR
    )


def show(out: Path, url: str, thread: str, proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None:
        with urllib.request.urlopen(f"{url}/api/conversations/{thread}/ag-ui/stream", timeout=30) as response:
            body = response.read().decode("utf-8")
        events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
        print(f"{thread} ({why_no_client()}; the raw stream): {' '.join(e['type'] for e in events)}")
        return
    stdout, _ = proc.communicate(timeout=120)
    result = json.loads(stdout)
    (out / f"ag-ui-{thread}.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"{thread} via @ag-ui/client ({len(result['events'])} events, error: {result['error']}):")
    results = {m["toolCallId"]: m["content"] for m in result["messages"] if m["role"] == "tool"}
    for message in result["messages"]:
        if message["role"] == "user" or (message["role"] == "assistant" and message.get("content")):
            print(f"  {message['role']}: {message['content']}")
        for call in message.get("toolCalls", []):
            function = call["function"]
            print(f"  tool {function['name']}({function['arguments']}) -> {results.get(call['id'])}")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "toolspan.db").unlink(missing_ok=True)
    server, url = start_server(out)
    try:
        watcher = client(url, THREAD)  # connected before the agent starts: it watches the run live
        os.environ.update(OTEL_EXPORTER_OTLP_ENDPOINT=url, OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf")
        os.environ["TOOLSPAN_PENDING_SPANS"] = "all"  # the whole run streams live: agent, model and tools
        provider: Any = toolspan.configure(service_name="ag-ui-agent")
        run_agent()
        provider.shutdown()
        show(out, url, THREAD, watcher)

        request = urllib.request.Request(
            f"{url}/v1/traces",
            data=FRAMEWORK_TRACE.read_bytes(),
            headers={"Content-Type": "application/x-protobuf"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30):
            pass
        _status, body = fetch(f"{url}/api/traces")
        framework = next(t for t in json.loads(body)["traces"] if t["service"] != "ag-ui-agent")
        thread = framework["conversation_id"] or framework["trace_id"]
        show(out, url, thread, client(url, thread))
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-output") / Path(__file__).stem)
