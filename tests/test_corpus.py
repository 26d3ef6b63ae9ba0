"""The framework corpus: every tool call that ran, recovered exactly from each framework's own traces.

``tests/corpus/<framework>/`` holds what ``scripts/corpus/generate.sh`` recorded from a real agent framework
run offline against a scripted model: OTLP JSON Lines (``traces.jsonl``) and OTLP protobuf (``traces.pb``)
of one run, and ``ground_truth.json``, written by the tool functions themselves (what they ran with, what
they returned or raised) and the script (the model's call ids). None of the frameworks is needed here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests._server import Server, running_server, sse_stream

from _bridge_data import validate
from toolspan.bridge import coalesce
from toolspan.bridge.facts import LLM, TOOL, classify
from toolspan.bridge.model import Span
from toolspan.bridge.readers import read_spans
from toolspan.bridge.readers._logs import attach_logs, logs_from_bytes
from toolspan.bridge.views import to_events, to_plans, to_progress, to_timelines, to_trees
from toolspan.bridge.views._common import TraceIndex, group_traces
from toolspan.cli import main as cli_main

CORPUS = Path(__file__).parent / "corpus"
FRAMEWORKS = (
    "langgraph_openinference",
    "langgraph_openllmetry",
    "openai_agents",
    "openai_v2",
    "pydantic_ai",
    "smolagents",
    "strands_default",
    "strands_latest",
    "google_adk_default",
    "google_adk_legacy",
    "google_adk_default_raising",
    "google_adk_legacy_raising",
    "semantic_kernel",
    "llamaindex_openinference",
    "haystack",
    "crewai_openinference",
    "agno_openinference",
    "autogen_agentchat",
)
ENCODINGS = ("traces.jsonl", "traces.pb")
# Gaps no trace data could close, each checked to still be a gap (the data is really absent).
# The OpenAI Agents SDK replaces a failing tool's exception by a fixed text before any span sees it.
REDACTED_ERRORS = {"openai_agents"}


# Frameworks whose every tool call has two tool spans, one inside the other (the inner one is not counted).
NESTED_TOOL_RECORDS = {"autogen_agentchat"}

# Frameworks whose content arrives as OTLP logs (log-based events) tied to the spans.
WITH_LOGS = {"openai_v2", "semantic_kernel"}
LOGS = {"traces.jsonl": "logs.jsonl", "traces.pb": "logs.pb"}


def test_the_corpus_holds_exactly_the_listed_frameworks() -> None:
    assert sorted(p.name for p in CORPUS.iterdir() if p.is_dir()) == sorted(FRAMEWORKS)
    for name in FRAMEWORKS:
        files = sorted(p.name for p in (CORPUS / name).iterdir())
        logs = ["logs.jsonl", "logs.pb"] if name in WITH_LOGS else []
        assert files == sorted(["ground_truth.json", "traces.jsonl", "traces.pb", *logs]), name


def _truth(framework: str) -> dict[str, Any]:
    truth: dict[str, Any] = json.loads((CORPUS / framework / "ground_truth.json").read_text("utf-8"))
    return truth


def _spans(framework: str, encoding: str, *, logs: bool = True) -> list[Span]:
    spans, report = read_spans(str(CORPUS / framework / encoding))
    assert (report.records_skipped, report.issues) == (0, [])
    assert spans
    if logs and framework in WITH_LOGS:
        records = logs_from_bytes((CORPUS / framework / LOGS[encoding]).read_bytes())
        spans, unmatched = attach_logs(spans, records)
        assert unmatched == 0
    return spans


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_without_its_logs_a_log_based_trace_has_no_requests(encoding: str) -> None:
    spans = _spans("openai_v2", encoding, logs=False)
    observes = [e for e in to_events(spans) if e["type"] == "observe"]
    assert len(observes) == 3
    assert {e["requested_by"] for e in observes} == {None}


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_tool_call_that_ran_is_recovered_exactly(framework: str, encoding: str) -> None:
    truth = _truth(framework)
    spans = _spans(framework, encoding)
    observes = [e for e in to_events(spans) if e["type"] == "observe"]
    # Exactly the calls that ran: no model or agent span taken for a tool, none lost, none twice.
    assert sorted(e["call_id"] for e in observes) == [t["call_id"] for t in truth["tool_calls"]]
    by_id = {e["call_id"]: e for e in observes}
    acts = {e["call_id"]: e for e in to_events(spans) if e["type"] == "act"}
    for expected in truth["tool_calls"]:
        event = by_id[expected["call_id"]]
        assert event["tool_name"] == expected["name"]
        assert acts[expected["call_id"]]["tool_input"] == expected["arguments"]
        if expected["error"] is None:
            assert event["is_error"] is False
            assert event["observation"] == expected["result"]
        else:
            assert event["is_error"] is True
            error = event["observation"]["error"]
            if framework in REDACTED_ERRORS:
                raw = (CORPUS / framework / encoding).read_bytes()
                assert expected["error"]["message"].encode() not in raw
            else:
                assert expected["error"]["message"] in error


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_each_tool_call_is_linked_to_the_model_call_that_asked_for_it(framework: str, encoding: str) -> None:
    spans = _spans(framework, encoding)
    llm_ids = {s.span_id for s in spans if classify(s) == LLM}
    tools = {s.span_id for s in spans if classify(s) == TOOL}
    # A call recorded twice, nested (AutoGen's own execute_tool span inside OpenInference's): one call.
    nested = {
        s.span_id
        for trace in group_traces(coalesce(spans))
        for i, s in enumerate(trace)
        if i in TraceIndex(trace).legs
    }
    assert bool(nested) == (framework in NESTED_TOOL_RECORDS)
    observes = [e for e in to_events(spans) if e["type"] == "observe"]
    assert {e["span_id"] for e in observes} == tools - nested
    for event in observes:
        assert event["requested_by"] in llm_ids, event
    # The parallel calls of the first turn come from one model call; a later call from a later one.
    first_turn = {e["requested_by"] for e in observes if e["tool_name"] != "final_answer"}
    assert len(first_turn) == 1


def _dicts_with(value: Any, key: str) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        own = [value] if key in value else []
        return own + [d for item in value.values() for d in _dicts_with(item, key)]
    if isinstance(value, list):
        return [d for item in value for d in _dicts_with(item, key)]
    return []


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_view_carries_the_recovered_ids(framework: str) -> None:
    truth = _truth(framework)
    spans = _spans(framework, "traces.jsonl")
    expected_ids = [t["call_id"] for t in truth["tool_calls"]]
    links = {e["call_id"]: e["requested_by"] for e in to_events(spans) if e["type"] == "act"}

    def tree_tools(node: dict[str, Any]) -> list[dict[str, Any]]:
        own = [node] if node["type"] == "tool" else []
        return own + [t for child in node["children"] for t in tree_tools(child)]

    tree_nodes = [n for doc in to_trees(spans) for n in tree_tools(doc["execution_tree"])]
    assert sorted((n["call_id"], n["requested_by"]) for n in tree_nodes) == sorted(links.items())
    timeline_calls = [
        (item["call_id"], item["requested_by"])
        for doc in to_timelines(spans)
        for item in doc["timeline"]
        if item["type"] == "tool_call"
    ]
    assert sorted(timeline_calls) == sorted(links.items())
    plan_calls = [
        (info["toolCallId"], info["requestedBy"]) for info in _dicts_with(to_plans(spans), "requestedBy")
    ]
    assert sorted(plan_calls) == sorted(links.items())
    progress_calls = {
        (env["event"]["call"]["id"], env["event"]["call"]["requested_by"])
        for env in to_progress(spans)
        if "call" in env["event"]
    }
    assert sorted(progress_calls) == sorted(links.items())
    assert sorted(links) == expected_ids


# Model-call fields a framework's trace does not give in structured form, with the reason (see README).
# openai_agents: OpenInference's generation span has no finish reason (the SDK's span data has none).
# (smolagents gives it only inside the text of the SDK's response object, ``raw``: read from there.)
# (langgraph_openllmetry names the model ``unknown`` on the model span: its name and finish reason come from
# the chain span above, whose output is the model's message.)
# agno_openinference: Agno's model span records the model's messages and token counts, not why it stopped.
NO_FINISH_REASON = {"openai_agents", "agno_openinference"}
NO_MODEL_NAME: set[str] = set()
FINISH_REASONS = {
    "openai_v2": ["tool_calls", "stop"],
    "pydantic_ai": ["tool_call", "stop"],
    "langgraph_openinference": ["tool_calls", "stop"],
    "langgraph_openllmetry": ["tool_calls", "stop"],
    "strands_default": ["tool_use", "end_turn"],
    "strands_latest": ["tool_use", "end_turn"],
    "smolagents": ["tool_calls", "tool_calls"],  # its final answer is a tool call too
    "google_adk_default": ["stop", "stop"],  # Gemini's STOP ends a turn of function calls too
    "google_adk_legacy": ["stop", "stop"],
    "google_adk_default_raising": ["stop"],  # the failing tool ends these runs: one model call, no answer
    "google_adk_legacy_raising": ["stop"],
    "semantic_kernel": ["tool_calls", "stop"],
    "llamaindex_openinference": ["tool_calls", "stop"],
    "haystack": ["tool_calls", "stop"],
    "crewai_openinference": ["tool_calls", "stop"],
    "autogen_agentchat": ["function_calls", "stop"],
}


def _model_calls(node: dict[str, Any]) -> list[dict[str, Any]]:
    own = [node["model_call"]] if "model_call" in node else []
    return own + [m for child in node["children"] for m in _model_calls(child)]


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_model_calls_usage_request_and_answer(framework: str, encoding: str) -> None:
    truth = _truth(framework)
    spans = _spans(framework, encoding)
    docs = [d for d in to_trees(spans) if "usage" in d]
    assert len(docs) == 1
    doc = docs[0]
    usage = truth["usage"]
    assert doc["usage"] == {
        "model_calls": len(usage),
        "input_tokens": sum(u["input_tokens"] for u in usage),
        "output_tokens": sum(u["output_tokens"] for u in usage),
        "cached_tokens": None,
        "reasoning_tokens": None,
    }
    calls = _model_calls(doc["execution_tree"])
    assert [(c["input_tokens"], c["output_tokens"]) for c in calls] == [
        (u["input_tokens"], u["output_tokens"]) for u in usage
    ]
    model = None if framework in NO_MODEL_NAME else truth["model"]
    assert [c["model"] for c in calls] == [model] * len(usage)
    reasons = [c["finish_reason"] for c in calls]
    assert reasons == ([None] * len(usage) if framework in NO_FINISH_REASON else FINISH_REASONS[framework])
    # The user's request and the final answer, in the tree, the timeline and the plans.
    assert doc["timeline"][0]["payload"]["goal"] == truth["user_request"]
    items = [i for d in to_timelines(spans) for i in d["timeline"]]
    messages = [(i["type"], i["content"].strip()) for i in items if i["type"].endswith("_message")]
    if truth["final_answer"] is None:  # the run ended with the tool's error
        assert doc["final_answer"] is None
        assert messages == [("user_message", truth["user_request"])]
    else:
        assert doc["final_answer"].strip() == truth["final_answer"]
        assert messages == [
            ("user_message", truth["user_request"]),
            ("assistant_message", truth["final_answer"]),
        ]
    requests = [p["userRequest"] for p in to_plans(spans)["plans"] if p["userRequest"] is not None]
    assert requests == [truth["user_request"]]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_view_of_the_corpus_is_valid_and_plans_carry_the_model_calls(framework: str) -> None:
    spans = _spans(framework, "traces.jsonl")
    for event in to_events(spans):
        validate("events", event)
    for envelope in to_progress(spans):
        validate("progress", envelope)
    for doc in to_timelines(spans):
        validate("timeline", doc)
    trees = to_trees(spans)
    for doc in trees:
        validate("tree", doc)
    plans = to_plans(spans)
    validate("plans", plans)
    tree_calls = [c for doc in trees for c in _model_calls(doc["execution_tree"])]
    plan_calls = [step["modelCall"] for step in _dicts_with(plans, "modelCall")]
    assert [(c["model"], c["input_tokens"], c["output_tokens"], c["finish_reason"]) for c in tree_calls] == [
        (c["model"], c["inputTokens"], c["outputTokens"], c["finishReason"]) for c in plan_calls
    ]
    usages = [a["usage"] for a in _dicts_with(plans, "usage")]
    assert sum(u["inputTokens"] for u in usages) == sum(u["input_tokens"] for u in _truth(framework)["usage"])
    timeline_usage = [d["usage"] for d in to_timelines(spans) if "usage" in d]
    assert [(u["modelCalls"], u["inputTokens"], u["outputTokens"]) for u in timeline_usage] == [
        (
            len(_truth(framework)["usage"]),
            *(sum(u[k] for u in _truth(framework)["usage"]) for k in ("input_tokens", "output_tokens")),
        )
    ]


# --- every path gives the same tool calls: the CLI's stream (default), --sorted, the tree, the server ------


def _cli(tmp_path: Path, framework: str, encoding: str, *flags: str) -> bytes:
    out = tmp_path / f"{framework}-{encoding}-{'-'.join(flags)}.out"
    logs = ["--logs", str(CORPUS / framework / LOGS[encoding])] if framework in WITH_LOGS else []
    argv = ["convert", str(CORPUS / framework / encoding), *flags, *logs, "-o", str(out)]
    assert cli_main(argv) == 0
    return out.read_bytes()


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def _calls_of(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Each tool call of an event stream: id, name, arguments, result or error, model call, span."""
    acts = {e["span_id"]: e for e in events if e["type"] == "act"}
    out = []
    for e in events:
        if e["type"] == "observe":
            act = acts[e["span_id"]]
            assert (act["call_id"], act["requested_by"]) == (e["call_id"], e["requested_by"])
            out.append(
                (
                    e["call_id"],
                    e["tool_name"],
                    json.dumps(act["tool_input"], sort_keys=True),
                    json.dumps(e["observation"], sort_keys=True),
                    e["is_error"],
                    e["requested_by"],
                    e["span_id"],
                )
            )
    assert len(out) == len(acts)
    return sorted(out)


def _tree_tools(node: dict[str, Any]) -> list[dict[str, Any]]:
    own = [node] if node["type"] == "tool" else []
    return own + [t for child in node["children"] for t in _tree_tools(child)]


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_cli_stream_sorted_and_tree_give_the_linked_calls(
    framework: str, encoding: str, tmp_path: Path
) -> None:
    expected = _calls_of(to_events(_spans(framework, encoding)))
    truth = _truth(framework)
    assert [c[0] for c in expected] == [t["call_id"] for t in truth["tool_calls"]]
    streamed = _calls_of(_lines(_cli(tmp_path, framework, encoding, "--to", "events")))
    ordered = _calls_of(_lines(_cli(tmp_path, framework, encoding, "--to", "events", "--sorted")))
    assert streamed == expected
    assert ordered == expected
    tree = json.loads(_cli(tmp_path, framework, encoding, "--to", "tree"))
    docs = tree if isinstance(tree, list) else [tree]
    nodes = [n for doc in docs for n in _tree_tools(doc["execution_tree"])]
    assert (
        sorted(
            (
                n["call_id"],
                n["tool_name"],
                json.dumps(n["input"], sort_keys=True),
                json.dumps(n["output"], sort_keys=True),
                n["is_error"],
                n["requested_by"],
                n["span_id"],
            )
            for n in nodes
        )
        == expected
    )


@pytest.fixture(scope="module")
def corpus_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with running_server(tmp_path_factory.mktemp("corpus-server")) as server:
        for framework in FRAMEWORKS:
            status, _, body = server.post_otlp((CORPUS / framework / "traces.pb").read_bytes())
            assert status == 200, body
            if framework in WITH_LOGS:
                status, _, body = server.request(
                    "POST",
                    "/v1/logs",
                    (CORPUS / framework / "logs.pb").read_bytes(),
                    {"Content-Type": "application/x-protobuf"},
                )
                assert status == 200, body
        yield server


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_servers_events_give_the_linked_calls(framework: str, corpus_server: Server) -> None:
    spans = _spans(framework, "traces.pb")
    expected = _calls_of(to_events(spans))
    got = []
    for trace_id in sorted({s.trace_id for s in spans}):
        got.extend(_lines(corpus_server.get(f"/api/traces/{trace_id}/events")))
    assert _calls_of(got) == expected


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_servers_live_trace_stream_gives_the_linked_calls(framework: str, corpus_server: Server) -> None:
    spans = _spans(framework, "traces.pb")
    expected = {(e["type"], e["span_id"]): e for e in to_events(spans)}
    counted = {key for key in expected}
    for trace_id in sorted({s.trace_id for s in spans}):
        got = []
        want = sum(1 for e in expected.values() if e["trace_id"] == trace_id)
        if not want:
            continue
        for event in sse_stream(corpus_server, f"/api/traces/{trace_id}/stream"):
            data = event.json()
            if (data["type"], data["span_id"]) in counted:  # a nested second record streams on its own
                got.append(data)
            if len(got) == want:
                break
        for data in got:
            linked = expected[(data["type"], data["span_id"])]
            assert (data["call_id"], data["requested_by"], data["tool_name"]) == (
                linked["call_id"],
                linked["requested_by"],
                linked["tool_name"],
            )
            key = "tool_input" if data["type"] == "act" else "observation"
            assert data[key] == linked[key]
