"""The framework corpus: every tool call that ran, recovered exactly from each framework's own traces.

``tests/corpus/<framework>/`` holds what ``scripts/corpus/generate.sh`` recorded from a real agent framework
run offline against a scripted model: OTLP JSON Lines (``traces.jsonl``) and OTLP protobuf (``traces.pb``)
of one run, and ``ground_truth.json``, written by the tool functions themselves (what they ran with, what
they returned or raised) and the script (the model's call ids). None of the frameworks is needed here.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.bridge_data import validate
from tests.support.corpus import (
    CORPUS,
    ENCODINGS,
    LOGS,
    NESTED_TOOL_RECORDS,
    NO_MESSAGES,
    NO_OUTPUT,
    REDACTED_ERRORS,
    SEQUENTIAL,
    WITH_LOGS,
    expected_calls,
)
from tests.support.corpus import SETUPS as FRAMEWORKS
from tests.support.corpus import spans as _spans
from tests.support.corpus import truth as _truth
from tests.support.server import Server, running_server, sse_stream
from toolspan.bridge import coalesce
from toolspan.bridge.facts import LLM, TOOL, classify
from toolspan.bridge.views import to_events, to_plans, to_progress, to_timelines, to_trees
from toolspan.bridge.views._common import TraceIndex, group_traces
from toolspan.cli import main as cli_main


def test_the_corpus_holds_exactly_the_listed_frameworks() -> None:
    assert sorted(p.name for p in CORPUS.iterdir() if p.is_dir()) == sorted(FRAMEWORKS)
    for name in FRAMEWORKS:
        files = sorted(p.name for p in (CORPUS / name).iterdir())
        logs = ["logs.jsonl", "logs.pb"] if name in WITH_LOGS else []
        assert files == sorted(["ground_truth.json", "traces.jsonl", "traces.pb", *logs]), name


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_without_its_logs_a_log_based_trace_has_no_requests(encoding: str) -> None:
    spans = _spans("openai_v2", encoding, logs=False)
    observes = [e for e in to_events(spans) if e["type"] == "observe"]
    assert len(observes) == 3
    assert {e["requested_by"] for e in observes} == {None}


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_each_tool_call_is_linked_to_the_model_call_that_asked_for_it(framework: str, encoding: str) -> None:
    spans = _spans(framework, encoding)
    llm_ids = {s.span_id for s in spans if classify(s) == LLM}
    tools = {s.span_id for s in spans if classify(s) == TOOL}
    # A call recorded twice, nested (AutoGen's own execute_tool span inside OpenInference's), or its MCP
    # transport legs (the MCP client's and server's records): one call.
    nested = {
        s.span_id
        for trace in group_traces(coalesce(spans))
        for index in [TraceIndex(trace)]
        for i, s in enumerate(trace)
        if classify(s) == TOOL and index.convention_kinds[i] != TOOL
    }
    assert bool(nested) == (framework in NESTED_TOOL_RECORDS)
    observes = [e for e in to_events(spans) if e["type"] == "observe"]
    assert {e["span_id"] for e in observes} == tools - nested
    for event in observes:
        assert event["requested_by"] in llm_ids, event
    # The parallel calls of the first turn come from one model call; a later call from a later one.
    first_turn = [e["requested_by"] for e in observes if e["tool_name"] != "final_answer"]
    if framework in SEQUENTIAL:  # one call a model call
        assert len(set(first_turn)) == len(first_turn)
    else:
        assert len(set(first_turn)) == 1


def _dicts_with(value: Any, key: str) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        own = [value] if key in value else []
        return own + [d for item in value.values() for d in _dicts_with(item, key)]
    if isinstance(value, list):
        return [d for item in value for d in _dicts_with(item, key)]
    return []


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_view_carries_the_recovered_ids(framework: str) -> None:
    spans = _spans(framework, "traces.jsonl")
    expected_ids = [t["call_id"] for t in expected_calls(framework, spans)]
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
# logfire_openai_agents: Logfire records the SDK's messages, which carry no finish reason.
# langfuse_openai: Langfuse's OpenAI integration records the reply message, not its choice's finish reason.
# beeai_openinference: BeeAI's chat model span records the messages and token counts, not why it stopped.
NO_FINISH_REASON = {
    "beeai_openinference",
    "openai_agents",
    "openai_agents_openllmetry",  # no output recorded (NO_OUTPUT)
    "mcp_openllmetry",  # the same OpenInference generation spans
    "agno_openinference",
    "logfire_openai_agents",
    "langfuse_openai",
    "dspy_react",
}
# DSPy's DummyLM reports no token counts and names itself "dummy": five model calls (four ReAct steps, then
# the answer's extraction).
NO_USAGE = {"dspy_react": ("dummy", 5), "openai_agents_openllmetry": ("scripted-model-1", 2)}
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
    "llamaindex_openinference_streaming": ["tool_calls", "stop"],
    "haystack": ["tool_calls", "stop"],
    "crewai_openinference": ["tool_calls", "stop"],
    "autogen_agentchat": ["function_calls", "stop"],
    "vercel_ai_generate": ["tool-calls", "stop"],  # the SDK's unified finish reasons
    "vercel_ai_stream": ["tool-calls", "stop"],
    "mlflow_native": ["tool_calls", "stop"],  # from the OpenAI client's span inside each generation
    "mlflow_genai": ["tool_calls", "stop"],
    "agent_framework": ["tool_calls", "stop"],
    "langgraph_js_openinference": ["tool_calls", "stop"],
    "openai_agents_js": ["tool_calls", "stop"],
    # Genkit's OpenAI-compatible plugin maps the API's tool_calls to its own stop; the failing tool ends the
    # run (one model call, no answer).
    "genkit_go": ["stop"],
    "google_adk_js": ["stop", "stop"],
    "spring_ai": ["TOOL_CALLS"],  # Spring AI's own spelling; the failing tool ends the run (see below)
}


def _check_no_messages(framework: str, encoding: str, spans: list[Any], doc: dict[str, Any]) -> None:
    truth = _truth(framework)
    assert truth["user_request"].encode() not in (CORPUS / framework / encoding).read_bytes()
    assert doc["timeline"][0]["payload"]["goal"] is None
    assert doc["final_answer"] is None
    items = [i for d in to_timelines(spans) for i in d["timeline"]]
    assert [i for i in items if i["type"].endswith("_message")] == []
    assert [p["userRequest"] for p in to_plans(spans)["plans"] if p["userRequest"] is not None] == []


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
    calls = _model_calls(doc["execution_tree"])
    if framework in NO_USAGE:
        model, count = NO_USAGE[framework]
        assert [(c["model"], c["input_tokens"], c["output_tokens"]) for c in calls] == [
            (model, None, None)
        ] * count
        assert doc["usage"] == {
            "model_calls": count,
            "input_tokens": None,
            "output_tokens": None,
            "cached_tokens": None,
            "reasoning_tokens": None,
        }
    else:
        usage = truth["usage"]
        assert doc["usage"] == {
            "model_calls": len(usage),
            "input_tokens": sum(u["input_tokens"] for u in usage),
            "output_tokens": sum(u["output_tokens"] for u in usage),
            "cached_tokens": None,
            "reasoning_tokens": None,
        }
        assert [(c["input_tokens"], c["output_tokens"]) for c in calls] == [
            (u["input_tokens"], u["output_tokens"]) for u in usage
        ]
        model = None if framework in NO_MODEL_NAME else truth["model"]
        assert [c["model"] for c in calls] == [model] * len(usage)
    reasons = [c["finish_reason"] for c in calls]
    assert reasons == ([None] * len(calls) if framework in NO_FINISH_REASON else FINISH_REASONS[framework])
    if framework in NO_MESSAGES:  # the messages never reach a span
        _check_no_messages(framework, encoding, spans, doc)
        return
    # The user's request and the final answer, in the tree, the timeline and the plans.
    assert doc["timeline"][0]["payload"]["goal"] == truth["user_request"]
    items = [i for d in to_timelines(spans) for i in d["timeline"]]
    messages = [(i["type"], i["content"].strip()) for i in items if i["type"].endswith("_message")]
    if truth["final_answer"] is None or framework in NO_OUTPUT:  # ended by the tool's error; not recorded
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
    timeline_usage = [d["usage"] for d in to_timelines(spans) if "usage" in d]
    if framework in NO_USAGE:
        assert {u["inputTokens"] for u in usages} == {None}
        assert [(u["modelCalls"], u["inputTokens"]) for u in timeline_usage] == [
            (NO_USAGE[framework][1], None)
        ]
        return
    usage = _truth(framework)["usage"]
    assert sum(u["inputTokens"] for u in usages) == sum(u["input_tokens"] for u in usage)
    assert [(u["modelCalls"], u["inputTokens"], u["outputTokens"]) for u in timeline_usage] == [
        (len(usage), *(sum(u[k] for u in usage) for k in ("input_tokens", "output_tokens")))
    ]


# --- every path gives exactly the calls that ran: the library's events, the CLI's stream (the default),
# --sorted, the tree, the server's /events and its live stream, in both encodings --------------------------


def _cli(tmp_path: Path, framework: str, encoding: str, *flags: str) -> bytes:
    out = tmp_path / f"{framework}-{encoding}-{'-'.join(flags)}.out"
    logs = ["--logs", str(CORPUS / framework / LOGS[encoding])] if framework in WITH_LOGS else []
    argv = ["convert", str(CORPUS / framework / encoding), *flags, *logs, "-o", str(out)]
    assert cli_main(argv) == 0
    return out.read_bytes()


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def _event_calls(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each tool call of an event stream, in the order its act came; its observe after its act, once."""
    acts: dict[str, dict[str, Any]] = {}
    calls = []
    for e in events:
        if e["type"] == "act":
            assert e["span_id"] not in acts, e
            acts[e["span_id"]] = e
        elif e["type"] == "observe":
            act = acts[e["span_id"]]  # an observe never comes before its act
            assert (act["call_id"], act["requested_by"], act["tool_name"]) == (
                e["call_id"],
                e["requested_by"],
                e["tool_name"],
            )
            calls.append(
                {
                    "span_id": e["span_id"],
                    "call_id": e["call_id"],
                    "name": e["tool_name"],
                    "arguments": act["tool_input"],
                    "output": e["observation"],
                    "is_error": e["is_error"],
                    "requested_by": e["requested_by"],
                }
            )
    assert len(calls) == len(acts)
    order = list(acts)
    return sorted(calls, key=lambda c: order.index(c["span_id"]))


def _tree_tools(node: dict[str, Any]) -> list[dict[str, Any]]:
    own = [node] if node["type"] == "tool" else []
    return own + [t for child in node["children"] for t in _tree_tools(child)]


def _docs(tree: Any) -> list[dict[str, Any]]:
    return tree if isinstance(tree, list) else [tree]


def _tree_calls(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "span_id": n["span_id"],
            "call_id": n["call_id"],
            "name": n["tool_name"],
            "arguments": n["input"],
            "output": n["output"],
            "is_error": n["is_error"],
            "requested_by": n["requested_by"],
        }
        for doc in docs
        for n in _tree_tools(doc["execution_tree"])
    ]


def _check_calls(
    framework: str, encoding: str, path: str, calls: list[dict[str, Any]], spans: list[Any]
) -> None:
    """``calls`` (one path's) are exactly the ground truth's: ids, names, arguments, results or errors."""
    expected = expected_calls(framework, spans)
    assert sorted(c["call_id"] for c in calls) == [t["call_id"] for t in expected], path
    by_id = {c["call_id"]: c for c in calls}
    for want in expected:
        got = by_id[want["call_id"]]
        assert (got["name"], got["arguments"]) == (want["name"], want["arguments"]), path
        if want["error"] is None:
            assert got["is_error"] is False, path
            assert got["output"] == want["result"], path
        else:
            assert got["is_error"] is True, path
            error = got["output"]["error"] if isinstance(got["output"], dict) else got["output"]
            if framework in REDACTED_ERRORS:  # the framework never let the text reach a span
                assert want["error"]["message"].encode() not in (CORPUS / framework / encoding).read_bytes()
            else:
                assert want["error"]["message"] in error, path


def _started_in_order(calls: list[dict[str, Any]], spans: list[Any]) -> bool:
    start = {s.span_id: s.start_ns for s in spans}
    times = [start[c["span_id"]] for c in calls]
    return times == sorted(times)


@pytest.fixture(scope="module")
def corpus_servers(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One server per encoding, every setup posted to it as OTLP/HTTP (protobuf, or JSON a request a line)."""
    with (
        running_server(tmp_path_factory.mktemp("corpus-pb")) as pb,
        running_server(tmp_path_factory.mktemp("corpus-json")) as js,
    ):
        for framework in FRAMEWORKS:
            for server, encoding, content_type in (
                (pb, "traces.pb", "application/x-protobuf"),
                (js, "traces.jsonl", "application/json"),
            ):
                data = (CORPUS / framework / encoding).read_bytes()
                bodies = [data] if encoding.endswith(".pb") else data.splitlines()
                for body in bodies:
                    status, _, answer = server.post_otlp(body, content_type)
                    assert status == 200, answer
                if framework in WITH_LOGS:
                    log_file = CORPUS / framework / LOGS[encoding]
                    log_data = log_file.read_bytes()
                    log_bodies = [log_data] if encoding.endswith(".pb") else log_data.splitlines()
                    for body in log_bodies:
                        status, _, answer = server.request(
                            "POST", "/v1/logs", body, {"Content-Type": content_type}
                        )
                        assert status == 200, answer
        yield {"traces.pb": pb, "traces.jsonl": js}


def _live_calls(server: Server, library: list[dict[str, Any]], spans: list[Any]) -> list[dict[str, Any]]:
    """The calls of the server's live stream of each trace that has any: the spans the library's events name,
    never another record of one of their calls (a nested record, an MCP transport leg)."""
    trace_of = {s.span_id: s.trace_id for s in spans}
    named = {c["span_id"] for c in library}
    events = []
    for trace_id in sorted({trace_of[c["span_id"]] for c in library}):
        want = sum(1 for c in library if trace_of[c["span_id"]] == trace_id)
        seen = 0
        for event in sse_stream(server, f"/api/traces/{trace_id}/stream"):
            data = event.json()
            if data.get("type") in ("act", "observe"):
                assert data["span_id"] in named, data
                events.append(data)
                seen += data["type"] == "observe"
            if seen == want:
                break
    return events


@pytest.mark.processes
@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_path_gives_exactly_the_calls_that_ran(
    framework: str, encoding: str, tmp_path: Path, corpus_servers: dict[str, Server]
) -> None:
    spans = _spans(framework, encoding)
    llm_ids = {s.span_id for s in spans if classify(s) == LLM}
    trace_ids = sorted({s.trace_id for s in spans})
    server = corpus_servers[encoding]
    paths = {
        "library": _event_calls(to_events(spans)),
        "convert --to events": _event_calls(_lines(_cli(tmp_path, framework, encoding, "--to", "events"))),
        "convert --to events --sorted": _event_calls(
            _lines(_cli(tmp_path, framework, encoding, "--to", "events", "--sorted"))
        ),
        "convert --to tree": _tree_calls(
            _docs(json.loads(_cli(tmp_path, framework, encoding, "--to", "tree")))
        ),
        "server /events": _event_calls(
            [e for t in trace_ids for e in _lines(server.get(f"/api/traces/{t}/events"))]
        ),
    }
    paths["server live stream"] = _event_calls(_live_calls(server, paths["library"], spans))
    links = {c["span_id"]: (c["call_id"], c["requested_by"]) for c in paths["library"]}
    for path, calls in paths.items():
        _check_calls(framework, encoding, path, calls, spans)
        # Every path gives the same links: the model's call ids and the model call that asked.
        assert {c["span_id"]: (c["call_id"], c["requested_by"]) for c in calls} == links, path
    assert all(c["requested_by"] in llm_ids for c in paths["library"])
    # In the order the calls started, wherever the whole trace is read.
    for path in ("convert --to events --sorted", "server /events"):
        assert _started_in_order(paths[path], spans), path
    truth_order = [t["call_id"] for t in expected_calls(framework, spans)]
    if framework in SEQUENTIAL:  # one call a step: the calls come in the order of the steps that asked
        in_order = paths["convert --to events --sorted"]
        steps = [{s.span_id: s.start_ns for s in spans}[c["requested_by"]] for c in in_order]
        assert steps == sorted(set(steps))
        if all(t["call_id"] is None for t in _truth(framework)["tool_calls"]):  # kept in the order they ran
            ran = [t["name"] + json.dumps(t["arguments"]) for t in _truth(framework)["tool_calls"]]
            assert [c["name"] + json.dumps(c["arguments"]) for c in in_order] == ran
    assert sorted(links[c][0] for c in links) == truth_order


# Each setup's spans by kind, as its convention says: GenAI's gen_ai.operation.name, OpenInference's
# openinference.span.kind, OpenLLMetry's traceloop.span.kind, or the framework's own (docs/frameworks.md).
# A model call inside another keeps its kind (llm); a kind the tracer states is the span's kind (LlamaIndex's
# request-building ``_prepare_chat_with_tools``, OpenInference LLM, is llm, not a model call: see below).
KINDS: dict[str, dict[str, int]] = {
    "langgraph_openinference": {"agent": 3, "chain": 11, "llm": 2, "tool": 3},
    "langgraph_openllmetry": {"agent": 3, "chain": 13, "llm": 2, "tool": 3},
    "openai_agents": {"agent": 2, "chain": 3, "llm": 2, "tool": 3},
    "openai_v2": {"agent": 1, "llm": 2, "tool": 3},
    "pydantic_ai": {"agent": 1, "llm": 2, "tool": 3},
    "smolagents": {"agent": 1, "chain": 2, "llm": 2, "tool": 4},
    "strands_default": {"agent": 1, "llm": 2, "other": 2, "tool": 3},
    "strands_latest": {"agent": 1, "llm": 2, "other": 2, "tool": 3},
    "google_adk_default": {"agent": 1, "chain": 1, "llm": 2, "other": 1, "tool": 3},
    "google_adk_legacy": {"agent": 1, "llm": 4, "other": 2, "tool": 3},
    "google_adk_default_raising": {"agent": 1, "chain": 1, "llm": 1, "other": 1, "tool": 3},
    "google_adk_legacy_raising": {"agent": 1, "llm": 2, "other": 2, "tool": 3},
    "semantic_kernel": {"agent": 1, "llm": 2, "other": 1, "tool": 3},
    "llamaindex_openinference": {"chain": 15, "llm": 4, "tool": 3},
    "llamaindex_openinference_streaming": {"chain": 15, "llm": 4, "tool": 3},
    "haystack": {"agent": 1, "llm": 2, "other": 2, "tool": 3},
    "crewai_openinference": {"agent": 1, "chain": 1, "llm": 2, "tool": 3},
    "agno_openinference": {"agent": 1, "llm": 2, "tool": 3},
    "autogen_agentchat": {"agent": 3, "llm": 2, "tool": 6},
    "vercel_ai_generate": {"agent": 1, "llm": 2, "tool": 3},
    "vercel_ai_stream": {"agent": 1, "llm": 2, "tool": 3},
    "mlflow_native": {"agent": 2, "chain": 3, "llm": 4, "tool": 3},
    "mlflow_genai": {"agent": 2, "llm": 4, "other": 3, "tool": 3},
    "logfire_openai_agents": {"agent": 1, "llm": 2, "other": 4, "tool": 3},
    "dspy_react": {"chain": 17, "llm": 5, "tool": 4},
    "langfuse_openai": {"agent": 1, "llm": 2, "tool": 3},
    "agent_framework": {"agent": 1, "llm": 2, "tool": 3},
    "langgraph_js_openinference": {"chain": 11, "llm": 2, "tool": 3},
    "openai_agents_js": {"agent": 2, "chain": 3, "llm": 2, "tool": 3},
    "genkit_go": {"agent": 1, "llm": 1, "tool": 3},
    "beeai_openinference": {"agent": 2, "llm": 4, "tool": 5},
    "google_adk_js": {"agent": 1, "llm": 2, "other": 2, "tool": 3},
    # The ChatClient (agent), its two advisors and the HTTP client's span (other), the model call, the tools.
    "spring_ai": {"agent": 1, "llm": 1, "other": 3, "tool": 3},
    # three calls, each recorded by the SDK (OpenInference), OpenLLMetry's MCP client and its MCP server
    "mcp_openllmetry": {"agent": 2, "chain": 5, "llm": 2, "other": 10, "tool": 9},
    "openai_agents_openllmetry": {"agent": 1, "chain": 1, "llm": 2, "tool": 3},
}


# What a tracer states: GenAI's gen_ai.operation.name (one of its values), else OpenInference's span kind.
GENAI_KINDS = {
    "execute_tool": "tool",
    "invoke_agent": "agent",
    "invoke_workflow": "chain",
    "chat": "llm",
    "generate_content": "llm",
}
OPENINFERENCE_KINDS = {"TOOL": "tool", "AGENT": "agent", "LLM": "llm", "CHAIN": "chain"}


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_span_has_its_conventions_kind(framework: str, encoding: str) -> None:
    spans = _spans(framework, encoding)
    counts = Counter(classify(s) for s in spans)
    assert dict(counts) == KINDS[framework]
    by_id = {s.span_id: s for s in spans}
    for trace in group_traces(coalesce(spans)):
        index = TraceIndex(trace)
        for i, span in enumerate(trace):
            kind = classify(span)
            if index.convention_kinds[i] != kind:  # a call's second record, or its MCP transport leg
                assert (kind, index.convention_kinds[i]) == (TOOL, "other"), span.name
            # The tracer's word, never re-guessed from the name or the tree (but ADK's "(merged tools)"
            # record, which runs no tool: its own marker says so).
            op = span.attributes.get("gen_ai.operation.name")
            stated = GENAI_KINDS.get(
                op, OPENINFERENCE_KINDS.get(span.attributes.get("openinference.span.kind"))
            )
            if stated is not None and span.attributes.get("gen_ai.tool.name") != "(merged tools)":
                assert kind == stated, span.name
            parent = by_id.get(span.parent_span_id or "")
            if parent is not None and classify(parent) == LLM and kind == LLM:
                assert i in index.inner_model_calls


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize(
    ("setup", "model_method"),
    [("llamaindex_openinference", ".achat"), ("llamaindex_openinference_streaming", ".astream_chat")],
)
def test_llamaindex_request_building_span_is_llm_and_no_model_call(
    setup: str, model_method: str, encoding: str
) -> None:
    """OpenInference marks LlamaIndex's ``_prepare_chat_with_tools`` LLM: the views say llm, none counts it
    as a model call (it builds the request the model call next to it sends)."""
    spans = _spans(setup, encoding)
    prepare = {s.span_id for s in spans if s.name.endswith("._prepare_chat_with_tools")}
    achat = {s.span_id for s in spans if s.name.endswith(model_method)}
    assert len(prepare) == len(achat) == 2

    def nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
        return [node] + [n for child in node["children"] for n in nodes(child)]

    tree = [n for doc in to_trees(spans) for n in nodes(doc["execution_tree"])]
    assert {n["span_id"]: n["kind"] for n in tree if n["span_id"] in prepare | achat} == dict.fromkeys(
        prepare | achat, "llm"
    )
    assert sorted(n["span_id"] for n in tree if "model_call" in n) == sorted(achat)
    trace = group_traces(coalesce(spans))[0]
    index = TraceIndex(trace)
    assert {trace[i].span_id for i in range(len(trace)) if index.is_model_call(i)} == achat
    assert {
        trace[i].span_id for i in range(len(trace)) if index.convention_kinds[i] == LLM
    } == prepare | achat
