"""The framework corpus (``tests/corpus/<setup>/``): its setups, what each one is known to lack, and its
ground truth with every call's expected id.

Each setup is a real framework run offline against a scripted model (``scripts/corpus/generate.sh``):
``traces.jsonl`` (OTLP JSON Lines) and ``traces.pb`` (OTLP protobuf), ``logs.*`` where the framework sends
its content as OTLP logs, and ``ground_truth.json``, written by the tools themselves (what they ran with,
returned or raised) and the script (the model's call ids; ``null`` where the model gives its calls no id).
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.paths import TESTS
from toolspan._util import ids
from toolspan.bridge.model import Span
from toolspan.bridge.readers import read_spans
from toolspan.bridge.readers._logs import attach_logs, logs_from_bytes

CORPUS = TESTS / "corpus"
SETUPS = (
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
    "llamaindex_openinference_streaming",
    "haystack",
    "crewai_openinference",
    "agno_openinference",
    "autogen_agentchat",
    # issue 29
    "vercel_ai_generate",
    "vercel_ai_stream",
    "mlflow_native",
    "mlflow_genai",
    "logfire_openai_agents",
    "dspy_react",
    "langfuse_openai",
    "agent_framework",
    "langgraph_js_openinference",
    "openai_agents_js",
    # issue 39
    "genkit_go",
    "beeai_openinference",
    "google_adk_js",
    "spring_ai",
    "mcp_openllmetry",
    "openai_agents_openllmetry",
)
ENCODINGS = ("traces.jsonl", "traces.pb")
LOGS = {"traces.jsonl": "logs.jsonl", "traces.pb": "logs.pb"}

# Gaps no trace data could close, each checked to still be a gap (the data is really absent).
# The OpenAI Agents SDK (Python and JavaScript) replaces a failing tool's exception by a fixed text before any
# span (its own processors', MLflow's, Logfire's, OpenInference's) sees it.
REDACTED_ERRORS = frozenset(
    {
        "openai_agents",
        "mlflow_native",
        "mlflow_genai",
        "logfire_openai_agents",
        "openai_agents_js",
        "openai_agents_openllmetry",
    }
)
# Spring AI records no message on its spans (its log-prompt and log-completion options write application log
# lines): neither the user's request nor the answer is in the trace, and no view makes one up.
NO_MESSAGES = frozenset({"spring_ai"})
# Setups whose trace holds no model call's output: OpenLLMetry's OpenAI Agents instrumentation records a
# Chat Completions model call's input only (the model's call ids are read from the next call's input), so
# the answer, the usage and the finish reasons are not in the trace.
NO_OUTPUT = frozenset({"openai_agents_openllmetry"})
# Frameworks whose tool calls have two tool spans, one inside the other (the inner one is not counted):
# AutoGen's own span inside OpenInference's, for every call; BeeAI's record of a failing tool's ``error``
# event; OpenLLMetry's MCP client span inside the OpenAI Agents SDK's (and the MCP server's span of the same
# call under it, a transport leg).
NESTED_TOOL_RECORDS = frozenset({"autogen_agentchat", "beeai_openinference", "mcp_openllmetry"})
# Frameworks whose content arrives as OTLP logs (log-based events) tied to the spans.
WITH_LOGS = frozenset({"openai_v2", "semantic_kernel"})
# Frameworks whose model asks for one tool a step (DSPy's ReAct; BeeAI's chat models by default), where the
# others ask for three at once.
SEQUENTIAL = frozenset({"dspy_react", "beeai_openinference"})


def truth(setup: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((CORPUS / setup / "ground_truth.json").read_text("utf-8"))
    return found


def spans(setup: str, encoding: str, *, logs: bool = True) -> list[Span]:
    """The setup's spans as read from ``encoding``, with its logs joined (none skipped, none unmatched)."""
    found, report = read_spans(str(CORPUS / setup / encoding))
    assert (report.records_skipped, report.issues) == (0, [])
    assert found
    if logs and setup in WITH_LOGS:
        records = logs_from_bytes((CORPUS / setup / LOGS[encoding]).read_bytes())
        found, unmatched = attach_logs(found, records)
        assert unmatched == 0
    return found


def expected_calls(setup: str, read: list[Span]) -> list[dict[str, Any]]:
    """The ground truth's calls, each with the id every view must give it: the model's own, or, where the
    model gives none (``call_id`` null), the tool span's (``call_<span id>``), found by the tool's name and
    arguments in the order the tools ran."""
    calls = truth(setup)["tool_calls"]
    if all(c["call_id"] is not None for c in calls):
        return [dict(c) for c in calls]
    from toolspan.bridge.facts import TOOL, classify, tool_input, tool_name

    tools = sorted((s for s in read if classify(s) == TOOL), key=lambda s: (s.start_ns, s.span_id))
    out = []
    for call in calls:
        span = next(
            s
            for s in tools
            if tool_name(s) == call["name"] and _arguments(tool_input(s)) == call["arguments"]
        )
        tools.remove(span)
        out.append({**call, "call_id": ids.synthetic_call_id(span.span_id)})
    return sorted(out, key=lambda c: c["call_id"])


def _arguments(value: Any) -> Any:
    from toolspan.bridge.facts._requests import normal_arguments

    return normal_arguments(value)
