"""Call ids that reach the trace only later: OpenLLMetry's OpenAI Agents instrumentation records a Chat
Completions model call's input, not its output, so the model's ids for a turn's calls are only in the next
model call's ``gen_ai.input.messages`` (the corpus's ``openai_agents_openllmetry`` run).

The views and ``toolspan convert --to events`` (its read-ahead holds the next model call) pair them from
there (``test_corpus``); a live stream, which sends a call when its span ends, before that model call ends,
(``LiveEventProcessor``, ``toolspan serve``'s SSE streams) sends it with the span's own id and sends its act
and observe again once the id is known.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.corpus import expected_calls
from tests.support.corpus import spans as corpus_spans
from tests.support.server import running_server, sse_stream
from toolspan._util import ids
from toolspan.bridge._otlp_write import to_otlp_json
from toolspan.bridge.facts import LLM, TOOL, classify, requested_calls
from toolspan.bridge.internal import earlier_requests
from toolspan.bridge.link import StreamLinker
from toolspan.bridge.views import act_event, observe_event

SETUP = "openai_agents_openllmetry"
SPANS = corpus_spans(SETUP, "traces.jsonl")
# As a live processor sees them: each span when it ends.
ENDED = sorted(SPANS, key=lambda s: (s.end_ns or 0, s.start_ns))
EXPECTED = sorted(c["call_id"] for c in expected_calls(SETUP, SPANS))


def test_the_ids_are_only_in_the_next_model_calls_input() -> None:
    llms = sorted((s for s in SPANS if classify(s) == LLM), key=lambda s: s.start_ns)
    assert [requested_calls(s) for s in llms] == [[], []]
    assert [r.id for r in earlier_requests(llms[0])] == []
    assert sorted(r.id for r in earlier_requests(llms[1])) == EXPECTED
    assert not any(c in str(s.attributes) for s in SPANS if classify(s) == TOOL for c in EXPECTED)


def _live(spans: list[Any]) -> list[dict[str, Any]]:
    """What ``LiveEventProcessor`` sends for spans ending in this order."""
    linker = StreamLinker()
    out = []
    for span in spans:
        call = linker.feed(span)
        if call is not None:
            out += [act_event(span, call), observe_event(span, call)]
        for record, linked in linker.corrected():
            out += [act_event(record, linked), observe_event(record, linked)]
    return out


def test_a_live_stream_sends_each_call_again_with_the_id_once_known() -> None:
    events = _live(ENDED)
    tools = {s.span_id for s in SPANS if classify(s) == TOOL}
    first = [e for e in events if e["type"] == "act"][: len(tools)]
    # Sent when each tool ended: the span's own id, no model call yet.
    assert sorted(e["call_id"] for e in first) == sorted(ids.synthetic_call_id(t) for t in tools)
    assert {e["requested_by"] for e in first} == {None}
    # The last act and observe of each call (its execution id) carry the model's id and the model call.
    last: dict[str, dict[str, Any]] = {}
    for event in events:
        last[event["execution_id"] + event["type"]] = event
    final = [e for e in last.values() if e["type"] == "observe"]
    assert sorted(e["call_id"] for e in final) == EXPECTED
    first_llm = min((s for s in SPANS if classify(s) == LLM), key=lambda s: s.start_ns).span_id
    assert {e["requested_by"] for e in last.values()} == {first_llm}
    # Each call is corrected once: two acts and two observes a call.
    assert len(events) == 4 * len(tools)


@pytest.mark.processes
@pytest.mark.parametrize("path", ["trace", "all"])
def test_the_live_server_stream_sends_each_call_again_once_the_next_model_call_is_stored(
    path: str, tmp_path: Path
) -> None:
    """The spans posted as they end: the tools (and the model call before them) first, the stream read,
    then the rest. The stream sends the calls with the span's own id, then each again with the model's id
    and the model call that asked, once the next model call (whose input shows them) is stored."""
    tools = [s for s in ENDED if classify(s) == TOOL]
    cut = max(ENDED.index(t) for t in tools) + 1
    trace_id = ENDED[0].trace_id
    url = f"/api/traces/{trace_id}/stream" if path == "trace" else "/api/stream?from=start"
    with running_server(tmp_path) as server:
        for span in ENDED[:cut]:
            assert server.post_otlp(json.dumps(to_otlp_json([span])).encode(), "application/json")[0] == 200
        events: list[dict[str, Any]] = []
        stream = sse_stream(server, url, timeout=20)
        for event in stream:
            if event.event in ("act", "observe"):
                events.append(event.json())
            if len(events) == 2 * len(tools):
                break
        assert {e["requested_by"] for e in events} == {None}
        for span in ENDED[cut:]:
            assert server.post_otlp(json.dumps(to_otlp_json([span])).encode(), "application/json")[0] == 200
        deadline = time.monotonic() + 20  # heartbeats keep the stream open: a missing correction fails
        for event in stream:
            if event.event in ("act", "observe"):
                events.append(event.json())
            if len(events) == 4 * len(tools) or time.monotonic() > deadline:
                break
        stream.close()
    later = events[2 * len(tools) :]
    assert sorted(e["call_id"] for e in later if e["type"] == "observe") == EXPECTED
    first_llm = min((s for s in SPANS if classify(s) == LLM), key=lambda s: s.start_ns).span_id
    assert {e["requested_by"] for e in later} == {first_llm}
    assert {e["execution_id"] for e in later} == {e["execution_id"] for e in events[: 2 * len(tools)]}
