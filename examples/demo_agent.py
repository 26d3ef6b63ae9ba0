"""An offline example agent: a scripted model, decorated tools, and the act/observe timeline of its spans.

    python examples/demo_agent.py [OUT_DIR]        # or --out OUT_DIR; default demo-output

No network and no API key: the "model" replays pre-scripted assistant turns in the Anthropic Messages
shape (``tool_use`` blocks). The agent loop is the one of seed 003: call the model, run the tool calls
it asked for (``toolspan.run_tool_calls``), append the results as a user message, call the model again
until it answers without tools. Two turns of one conversation:

1. "What's the weather in Paris and what is 25 + 30?": ``get_weather`` and ``add`` run in parallel.
2. "Research OpenTelemetry, then clean up the scratch files.": ``research`` starts a sub-plan with its own
   agent and tool (the sub-plan's spans point back at the ``research`` call), then ``delete_files`` is
   denied by the approver (state DENIED, the model is told ``PermissionDenied: ...``).

Spans go to ``DIR/traces.jsonl`` (OTLP JSON Lines; also to an OTLP endpoint when
``OTEL_EXPORTER_OTLP_ENDPOINT`` is set). The demo then reads that file back with the bridge, prints the
act/observe timeline and writes ``events.jsonl``, ``timeline.json``, ``tree.json`` and ``plans.json``, and
the trace page ``run.html`` (its path is printed: open it in a browser).
Everything but ids and times is the same on every run (the two parallel calls may interleave either way).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import toolspan
from toolspan.bridge.readers import read_spans
from toolspan.bridge.views import to_events, to_pages, to_plans, to_timelines, to_trees
from toolspan.page import render_html

CONVERSATION_ID = "conv-demo-0001"
SERVICE_NAME = "toolspan-demo"


# --- tools ---------------------------------------------------------------------------------------

WEATHER = {"Paris": {"temp_c": 18, "sky": "cloudy"}, "Tokyo": {"temp_c": 24, "sky": "clear"}}
NOTES = {
    "OpenTelemetry": [
        "OpenTelemetry is a CNCF project for traces, metrics and logs.",
        "A span records one operation; spans form a trace through parent ids.",
    ]
}


@toolspan.tool
def get_weather(city: str) -> dict[str, Any]:
    """Current weather of a city."""
    return {"city": city, **WEATHER.get(city, {"temp_c": None, "sky": "unknown"})}


@toolspan.tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@toolspan.tool(description="Search the local notes for a query.")
def search_notes(query: str) -> list[str]:
    return NOTES.get(query, [])


@toolspan.tool
def research(topic: str) -> dict[str, Any]:
    """Research a topic: runs a sub-plan with its own agent (a child of this tool call)."""
    with toolspan.plan(f"research {topic}"):
        answer = run_agent(
            "researcher",
            ScriptedModel(RESEARCHER_SCRIPT),
            [{"role": "user", "content": f"Find what the notes say about {topic}."}],
            {"search_notes": search_notes},
        )
    return {"topic": topic, "summary": answer}


@toolspan.tool
def delete_files(pattern: str) -> int:
    """Delete the files matching a glob pattern (never runs in this demo: the approver denies it)."""
    raise AssertionError("delete_files must not run: the approver denies it")


TOOLS = [get_weather, add, research, delete_files]


def approve(call: toolspan.ToolCall) -> toolspan.Approval | bool:
    """The control channel of seed 003: deny destructive tools, allow the rest."""
    if call.name == "delete_files":
        return toolspan.Approval("deny", note="deleting files needs a human; the demo denies it")
    return True


# --- the scripted model ----------------------------------------------------------------------------

Turn = Callable[[dict[str, Any]], list[dict[str, Any]]]


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


ASSISTANT_SCRIPT: list[Turn] = [
    lambda _: [
        text("I'll look up the weather and do the sum at the same time."),
        tool_use("toolu_demo_01", "get_weather", city="Paris"),
        tool_use("toolu_demo_02", "add", a=25, b=30),
    ],
    lambda r: [
        text(
            f"It is {r['toolu_demo_01']['temp_c']} °C and {r['toolu_demo_01']['sky']} in Paris, "
            f"and 25 + 30 = {r['toolu_demo_02']:g}."
        )
    ],
    lambda _: [
        text("First I'll research the topic."),
        tool_use("toolu_demo_03", "research", topic="OpenTelemetry"),
    ],
    lambda _: [
        text("Now the scratch files."),
        tool_use("toolu_demo_04", "delete_files", pattern="scratch/*"),
    ],
    lambda r: [
        text(
            f"Research summary: {r['toolu_demo_03']['summary']} "
            f"I could not clean up the scratch files ({r['toolu_demo_04']})."
        )
    ],
]

RESEARCHER_SCRIPT: list[Turn] = [
    lambda _: [
        text("Searching the notes."),
        tool_use("toolu_demo_sub_01", "search_notes", query="OpenTelemetry"),
    ],
    lambda r: [text(" ".join(r["toolu_demo_sub_01"]))],
]


class ScriptedModel:
    """Replays pre-scripted assistant turns; each turn sees the tool results so far."""

    def __init__(self, script: list[Turn]) -> None:
        self._turns: Iterator[Turn] = iter(script)

    def create(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The next assistant turn, given the conversation so far (tool results are parsed back)."""
        results: dict[str, Any] = {}
        for message in messages:
            if message["role"] == "user" and isinstance(message["content"], list):
                for block in message["content"]:
                    content = block["content"]
                    results[block["tool_use_id"]] = content if block["is_error"] else json.loads(content)
        return {"role": "assistant", "content": next(self._turns)(results)}


# --- the agent loop (seed 003) ----------------------------------------------------------------------


def run_agent(
    name: str,
    model: ScriptedModel,
    messages: list[dict[str, Any]],
    tools: Any,
    conversation_id: str | None = None,
) -> str:
    """One agent turn: model -> tools -> model ... until the model answers without tool calls."""
    question = messages[-1]["content"]
    with toolspan.agent(name, conversation_id=conversation_id, input=question) as agent:
        while True:
            reply = model.create(messages)
            messages.append(reply)
            said = " ".join(block["text"] for block in reply["content"] if block["type"] == "text")
            if not any(block["type"] == "tool_use" for block in reply["content"]):
                agent.set_output(said)
                return said
            toolspan.thought(said)
            results = toolspan.run_tool_calls(reply["content"], tools, approve=approve)
            messages.append({"role": "user", "content": results})


# --- output ------------------------------------------------------------------------------------------


def short(value: Any, limit: int = 60) -> str:
    textual = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return textual if len(textual) <= limit else textual[: limit - 1] + "\u2026"


def tool_depths(spans: list[Any]) -> dict[str, int]:
    """How many tool calls each span runs inside (a sub-plan's tools sit inside the tool that started it)."""
    by_id = {span.span_id: span for span in spans}
    depths = {}
    for span in spans:
        depth, parent = 0, by_id.get(span.parent_span_id or "")
        while parent is not None:
            depth += parent.attributes.get("gen_ai.operation.name") == "execute_tool"
            parent = by_id.get(parent.parent_span_id or "")
        depths[span.span_id] = depth
    return depths


def print_timeline(events: list[dict[str, Any]], depths: dict[str, int]) -> None:
    print(f"{'seq':>3}  {'type':<7}  {'tool':<14}  {'call id':<18}  {'execution id':<21}  input / output")
    for seq, event in enumerate(events, 1):
        if event["type"] == "act":
            detail = short(event["tool_input"])
        elif event["is_error"]:
            detail = f"[{event['state']}] " + short(event["observation"].get("error"))
        else:
            detail = f"[{event['state']}] " + short(event["observation"])
        tool = "  " * depths.get(event["span_id"], 0) + event["tool_name"]
        print(
            f"{seq:>3}  {event['type']:<7}  {tool:<14}  {event['call_id']:<18}  "
            f"{event['execution_id']:<21}  {detail}"
        )


def write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "out_dir", nargs="?", type=Path, metavar="OUT_DIR", help="output directory (default: demo-output)"
    )
    parser.add_argument("--out", type=Path, metavar="OUT_DIR", help="the same, as an option")
    args = parser.parse_args(argv)
    if args.out_dir is not None and args.out is not None and args.out_dir != args.out:
        parser.error("give the output directory once: OUT_DIR or --out OUT_DIR")
    out: Path = args.out_dir or args.out or Path("demo-output")
    out.mkdir(parents=True, exist_ok=True)
    traces = out / "traces.jsonl"
    traces.unlink(missing_ok=True)

    provider = toolspan.configure(service_name=SERVICE_NAME, file=traces)
    model = ScriptedModel(ASSISTANT_SCRIPT)
    messages: list[dict[str, Any]] = []
    for question in (
        "What's the weather in Paris and what is 25 + 30?",
        "Research OpenTelemetry for me, then clean up the scratch files.",
    ):
        messages.append({"role": "user", "content": question})
        answer = run_agent("assistant", model, messages, TOOLS, conversation_id=CONVERSATION_ID)
        print(f"user:      {question}\nassistant: {answer}\n")
    shutdown = getattr(provider, "shutdown", None)
    if shutdown is not None:
        shutdown()  # flush and close traces.jsonl

    spans, _report = read_spans(traces)
    events = to_events(spans)
    print_timeline(events, tool_depths(spans))
    (out / "events.jsonl").write_text(
        "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events), encoding="utf-8"
    )
    timelines = to_timelines(spans)
    write_json(out / "timeline.json", next(t for t in timelines if t["conversationId"] == CONVERSATION_ID))
    write_json(out / "tree.json", to_trees(spans))  # one trace document per turn
    write_json(out / "plans.json", to_plans(spans))
    names = "traces.jsonl events.jsonl timeline.json tree.json plans.json"
    print(f"\n{len(spans)} spans; trace files in {out}/: {names}")
    (out / "run.html").write_text(render_html(to_pages(spans)), encoding="utf-8")
    print(f"trace page: {(out / 'run.html').resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
