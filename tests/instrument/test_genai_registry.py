"""toolspan's ``gen_ai.*`` names against the OpenTelemetry GenAI registry, as the project pins it.

The ``opentelemetry-semantic-conventions`` release in ``constraints/test.txt`` lists every GenAI attribute in
``opentelemetry.semconv._incubating.attributes.gen_ai_attributes``, each with a note: moved (current, now
defined by the GenAI semantic conventions repository), "Replaced by `<name>`" (renamed) or "Removed". The
registry's types are in that repository's YAML model: ``tests/fixtures/semconv/gen-ai-registry.yaml`` keeps
each attribute's key and type (provenance in ``tests/fixtures/SOURCES.md``), checked here against the pinned
package. The attributes toolspan writes are taken from the spans its decorators make with the real SDK.
"""

from __future__ import annotations

import ast
import importlib.metadata
import inspect
import itertools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
import yaml
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes

import toolspan
from tests.support.paths import REPO, TESTS
from toolspan import semconv
from toolspan.bridge.facts import classify
from toolspan.bridge.model import Span
from toolspan.config import Config, set_config
from toolspan.testing import capture_spans

REGISTRY_FILE = TESTS / "fixtures" / "semconv" / "gen-ai-registry.yaml"
PACKAGE = "opentelemetry-semantic-conventions"

# Every gen_ai.* attribute toolspan writes, on its spans and span events.
WRITTEN = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.tool.name",
        "gen_ai.tool.type",
        "gen_ai.tool.description",
        "gen_ai.tool.call.id",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.agent.name",
        "gen_ai.agent.id",
        "gen_ai.agent.description",
        "gen_ai.conversation.id",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
    }
)
# The renames of the pinned registry: for each older name, whether the bridge reads it (with its current name)
# or reads neither (no view carries what it says: semconv then holds neither name).
READ_UNDER_BOTH_NAMES = {
    "gen_ai.usage.prompt_tokens": "gen_ai.usage.input_tokens",
    "gen_ai.usage.completion_tokens": "gen_ai.usage.output_tokens",
}
READ_UNDER_NEITHER_NAME = {
    "gen_ai.system": "gen_ai.provider.name",
    "gen_ai.openai.request.seed": "gen_ai.request.seed",
    "gen_ai.openai.request.response_format": "gen_ai.output.type",
    "gen_ai.openai.request.service_tier": "openai.request.service_tier",
    "gen_ai.openai.response.service_tier": "openai.response.service_tier",
    "gen_ai.openai.response.system_fingerprint": "openai.response.system_fingerprint",
}
# gen_ai.* names in toolspan.semconv that are no attribute: the older content events the bridge reads, and
# the prefix of OpenLLMetry's flattened completions.
EVENT_NAMES = frozenset(
    {
        "gen_ai.user.message",
        "gen_ai.system.message",
        "gen_ai.assistant.message",
        "gen_ai.tool.message",
        "gen_ai.choice",
    }
)
PREFIXES = frozenset({"gen_ai.completion."})

_RENAMED = re.compile(r"^Deprecated: Replaced by `([a-z0-9_.]+)`")
_MOVED = "Deprecated: Moved to the [OpenTelemetry GenAI semantic conventions repository]"
_REMOVED = "Deprecated: Removed, no replacement at this time."


def _package_attributes() -> dict[str, tuple[str, str | None]]:
    """Each attribute of the pinned package: ``(status, replacement)``, status ``current`` / ``renamed`` /
    ``removed``, read from the note under its constant."""
    tree = ast.parse(inspect.getsource(gen_ai_attributes))
    out: dict[str, tuple[str, str | None]] = {}
    for node, after in itertools.pairwise(tree.body):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Constant)):
            continue
        assert isinstance(after, ast.Expr), ast.dump(node)
        assert isinstance(after.value, ast.Constant), ast.dump(node)
        name, note = node.value.value, str(after.value.value).strip()
        renamed = _RENAMED.match(note)
        if renamed is not None:
            out[name] = ("renamed", renamed[1])
        elif note.startswith(_MOVED):
            out[name] = ("current", None)
        elif note == _REMOVED:
            out[name] = ("removed", None)
        else:
            raise AssertionError(f"{name}: a note this test does not know: {note!r}")
    return out


def _registry() -> dict[str, Any]:
    """Each attribute of the vendored registry: its type (a name, or the list of an enum's values)."""
    doc = yaml.safe_load(REGISTRY_FILE.read_text("utf-8"))
    out: dict[str, Any] = {}
    for attribute in doc["attributes"]:
        kind = attribute["type"]
        out[attribute["key"]] = [m["value"] for m in kind["members"]] if isinstance(kind, dict) else kind
    return out


PACKAGE_ATTRIBUTES = _package_attributes()
REGISTRY = _registry()


def test_the_pinned_package_is_the_one_installed_and_its_notes_are_all_read() -> None:
    pins = (REPO / "constraints" / "test.txt").read_text("utf-8").splitlines()
    assert f"{PACKAGE}=={importlib.metadata.version(PACKAGE)}" in pins
    constants = [v for k, v in vars(gen_ai_attributes).items() if k.startswith("GEN_AI_")]
    assert sorted(PACKAGE_ATTRIBUTES) == sorted(constants)
    assert {status for status, _ in PACKAGE_ATTRIBUTES.values()} == {"current", "renamed", "removed"}


def test_the_vendored_registry_holds_every_current_attribute_of_the_pinned_package() -> None:
    current = {name for name, (status, _) in PACKAGE_ATTRIBUTES.items() if status == "current"}
    assert current <= set(REGISTRY), sorted(current - set(REGISTRY))
    gone = {name for name, (status, _) in PACKAGE_ATTRIBUTES.items() if status != "current"}
    assert not gone & set(REGISTRY)
    for name, (status, replacement) in PACKAGE_ATTRIBUTES.items():
        if status == "renamed" and replacement is not None and replacement.startswith("gen_ai."):
            assert replacement in REGISTRY, name
    # The enums the package lists: every value of theirs is a member in the registry.
    enums = {
        "gen_ai.operation.name": gen_ai_attributes.GenAiOperationNameValues,
        "gen_ai.provider.name": gen_ai_attributes.GenAiProviderNameValues,
        "gen_ai.output.type": gen_ai_attributes.GenAiOutputTypeValues,
        "gen_ai.token.type": gen_ai_attributes.GenAiTokenTypeValues,
    }
    for name, enum in enums.items():
        assert {member.value for member in enum} <= set(REGISTRY[name]), name


# --- what toolspan writes --------------------------------------------------------------------------------


@toolspan.tool(description="Current weather of a city.")
def get_weather(city: str) -> dict[str, Any]:
    return {"city": city, "temp_c": 18}


@toolspan.tool(tool_type=semconv.TOOL_TYPE_DATASTORE)
def lookup(city: str) -> int:
    if city == "Atlantis":
        raise LookupError(f"unknown city: {city}")
    return 2_100_000


@toolspan.tool
def countdown(n: int) -> Iterator[int]:
    yield from range(n, 0, -1)


def _run_everything() -> None:
    """Every span and event toolspan writes gen_ai.* attributes on: agents with every option, their
    messages, tools of each type with and without the model's call id, one failing, one a generator, and a
    call that waits for a permission under an agent."""
    with toolspan.agent(
        "planner",
        input="Weather in Paris?",
        conversation_id="conv-1",
        description="Plans the trip.",
        agent_id="agent-7",
    ) as run:
        with toolspan.tool_call_id("call_weather_paris"):
            get_weather("Paris")
        with pytest.raises(LookupError):
            lookup("Atlantis")
        assert list(countdown(2)) == [2, 1]

        @toolspan.tool
        def book(city: str) -> str:
            toolspan.record_permission_required("Book a trip?")
            toolspan.record_permission_decided("allow", by="ops")
            return f"booked {city}"

        book("Paris")
        run.set_output("18 C in Paris")

    @toolspan.agent
    def answer(messages: list[dict[str, str]]) -> str:
        return "done"

    answer([{"role": "user", "content": "hello"}])


@pytest.fixture(scope="module", params=["genai", "genai,openinference"])
def written(request: pytest.FixtureRequest) -> Iterator[list[ReadableSpan]]:
    """The spans of ``_run_everything`` in each conventions setting that writes GenAI attributes."""
    set_config(Config(conventions=request.param))
    try:
        with capture_spans() as finished:
            _run_everything()
            yield list(finished())
    finally:
        set_config(None)


def _genai_values(spans: Sequence[ReadableSpan]) -> Iterator[tuple[str, Any, str]]:
    """Each gen_ai.* attribute of the spans and their events: ``(key, value, where)``."""
    for span in spans:
        sources: list[tuple[str, Mapping[str, Any] | None]] = [(span.name, span.attributes)]
        sources += [(f"{span.name} / {e.name}", e.attributes) for e in span.events]
        for where, attrs in sources:
            for key, value in (attrs or {}).items():
                if key.startswith("gen_ai."):
                    yield key, value, where


def test_toolspan_writes_these_genai_attributes(written: list[ReadableSpan]) -> None:
    assert {key for key, _, _ in _genai_values(written)} == WRITTEN
    # The permission event names the agent the call runs under (gen_ai.agent.name on an event too).
    events = [e for s in written for e in s.events if e.name == semconv.PERMISSION_REQUIRED_EVENT]
    assert [e.attributes["gen_ai.agent.name"] for e in events if e.attributes] == ["planner"]


def _check_type(key: str, value: Any, kind: Any) -> None:
    if isinstance(kind, list):  # an enum: one of its values
        assert value in kind, (key, value)
    elif kind == "string":
        assert isinstance(value, str), key
    elif kind == "int":
        assert isinstance(value, int), key
        assert not isinstance(value, bool), key
    elif kind == "any":
        # Structured content: on spans, JSON text where the SDK holds no structured values.
        assert isinstance(value, str), key
        json.loads(value)
    else:
        raise AssertionError(f"{key}: toolspan writes no attribute of registry type {kind!r}")


def test_every_genai_attribute_toolspan_writes_is_current_and_of_the_registry_type(
    written: list[ReadableSpan],
) -> None:
    seen = 0
    for key, value, where in _genai_values(written):
        assert PACKAGE_ATTRIBUTES.get(key) == ("current", None), (key, where)
        assert key in REGISTRY, (key, where)
        _check_type(key, value, REGISTRY[key])
        seen += 1
    assert seen > len(WRITTEN)
    # The messages follow the registry's message shape: a role and parts, each part typed.
    for key, value, _ in _genai_values(written):
        if key in ("gen_ai.input.messages", "gen_ai.output.messages"):
            messages = json.loads(value)
            assert messages, value
            assert all({"role", "parts"} <= set(m) for m in messages), value
            assert all("type" in part for m in messages for part in m["parts"]), value


def test_every_genai_name_in_semconv_is_a_current_attribute_an_older_name_read_or_no_attribute() -> None:
    names = {v for k, v in vars(semconv).items() if k.isupper() and isinstance(v, str)}
    genai = {n for n in names if n.startswith("gen_ai.")}
    current = {n for n in genai if n in REGISTRY and PACKAGE_ATTRIBUTES.get(n) == ("current", None)}
    older = genai & set(READ_UNDER_BOTH_NAMES)
    assert genai == current | older | EVENT_NAMES | PREFIXES, sorted(genai - current - older)
    assert current >= WRITTEN
    # Every value of gen_ai.operation.name that toolspan names is one of the registry's.
    operations = {v for k, v in vars(semconv).items() if k.startswith("OP_") and isinstance(v, str)}
    assert operations <= set(REGISTRY["gen_ai.operation.name"])
    tool_types = {v for k, v in vars(semconv).items() if k.startswith("TOOL_TYPE_")}
    assert tool_types == {"function", "extension", "datastore"}  # the registry's examples of gen_ai.tool.type


def test_every_rename_of_the_registry_is_read_under_both_names_or_neither() -> None:
    renames = {name: new for name, (status, new) in PACKAGE_ATTRIBUTES.items() if status == "renamed"}
    assert renames == READ_UNDER_BOTH_NAMES | READ_UNDER_NEITHER_NAME
    names = {v for k, v in vars(semconv).items() if k.isupper() and isinstance(v, str)}
    for old, new in READ_UNDER_BOTH_NAMES.items():
        assert {old, new} <= names, old
    for old, new in READ_UNDER_NEITHER_NAME.items():
        assert not {old, new} & names, old


# The kind the bridge reads each value of gen_ai.operation.name in the registry as: the tracer's word. The
# memory and memory-store writes are no tool, agent, model call or retrieval: other.
OPERATION_KINDS = {
    "chat": "llm",
    "generate_content": "llm",
    "text_completion": "llm",
    "embeddings": "llm",
    "retrieval": "retriever",
    "search_memory": "retriever",
    "create_agent": "agent",
    "invoke_agent": "agent",
    "execute_tool": "tool",
    "invoke_workflow": "chain",
    "plan": "chain",
    "create_memory": "other",
    "update_memory": "other",
    "upsert_memory": "other",
    "delete_memory": "other",
    "create_memory_store": "other",
    "delete_memory_store": "other",
}


def test_the_bridge_reads_every_operation_of_the_registry_as_its_kind() -> None:
    assert sorted(OPERATION_KINDS) == sorted(REGISTRY["gen_ai.operation.name"])
    for operation, kind in OPERATION_KINDS.items():
        span = Span(
            trace_id="0" * 31 + "1",
            span_id="0" * 15 + "1",
            parent_span_id=None,
            name="step",
            start_ns=0,
            end_ns=1,
            attributes={"gen_ai.operation.name": operation},
        )
        assert classify(span) == kind, operation
