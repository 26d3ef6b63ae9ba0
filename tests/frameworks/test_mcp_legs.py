"""One MCP tool call, recorded up to four times, is one call in every view, whichever record arrives first.

The records are the real ones of the corpus's ``mcp_openllmetry`` run (the OpenAI Agents SDK's span of the
call, OpenLLMetry's MCP client span under it, and the MCP server's ``mcp.server`` span with its own span of
the call, continued in another process): every path that reads spans as they come (``toolspan convert --to
events``'s stream, a live processor's linker, ``toolspan serve``'s SSE streams) gets them in every order of
one call's records, and in random orders of the whole run, and gives exactly the calls that ran, with the
SDK's arguments, results and the model's ids.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.corpus import expected_calls
from tests.support.corpus import spans as corpus_spans
from tests.support.server import running_server, sse_stream
from toolspan import semconv as sc
from toolspan.bridge._otlp_write import to_otlp_json
from toolspan.bridge.link import StreamLinker, link_stream
from toolspan.bridge.model import Span
from toolspan.bridge.views import act_event, observe_event, to_events, to_tree
from toolspan.cli._main import _events_stream

SETUP = "mcp_openllmetry"
SPANS = [s for s in corpus_spans(SETUP, "traces.jsonl")]
AGENT_TRACE = next(s.trace_id for s in SPANS if s.name == "weather_agent")
# As a live stream sees them: each span when it ends (a model call before the calls it asked for).
RUN = sorted((s for s in SPANS if s.trace_id == AGENT_TRACE), key=lambda s: (s.end_ns or 0, s.start_ns))
BY_ID = {s.span_id: s for s in RUN}


def _calls() -> list[tuple[str, str, Any, Any]]:
    out = []
    for call in expected_calls(SETUP, SPANS):
        outcome = {"error": call["error"]["message"]} if call["error"] else call["result"]
        out.append((call["call_id"], call["name"], call["arguments"], outcome))
    return sorted(out, key=lambda c: c[0])


EXPECTED = _calls()
ERROR = next(c[3]["error"] for c in EXPECTED if isinstance(c[3], dict) and "error" in c[3])


def _records(call_span: Span) -> list[Span]:
    """The records of one call: the SDK's span and everything under it (the MCP client's and server's)."""
    out = [call_span]
    for span in RUN:
        p = span.parent_span_id
        while p is not None and p in BY_ID:
            if p == call_span.span_id:
                out.append(span)
                break
            p = BY_ID[p].parent_span_id
    return out


SDK_CALLS = [
    s for s in RUN if s.scope.startswith("openinference") and s.name in ("get_weather", "get_population")
]


def _outcome(event: dict[str, Any]) -> Any:
    """The result, or the error as the ground truth says it when the text recorded holds it."""
    if not event["is_error"]:
        return event["observation"]
    text = event["observation"]["error"]
    return {"error": ERROR if ERROR in text else text}


def _event_calls(events: Iterable[dict[str, Any]], *, linked: bool = True) -> list[tuple[str, str, Any, Any]]:
    """Each call of an event stream once: an act, then its observe (checked), as (id, name, args, outcome)."""
    acts: dict[str, dict[str, Any]] = {}
    calls = []
    for event in events:
        if event["type"] == "act":
            assert event["span_id"] not in acts, event
            acts[event["span_id"]] = event
            continue
        act = acts[event["span_id"]]
        assert (act["call_id"], act["requested_by"]) == (event["call_id"], event["requested_by"])
        assert (event["requested_by"] is not None) == linked
        calls.append((event["call_id"], event["tool_name"], act["tool_input"], _outcome(event)))
    assert len(calls) == len(acts)
    return sorted(calls, key=lambda c: c[0])


def _linker_events(spans: Iterable[Span]) -> Iterator[dict[str, Any]]:
    """What a live processor sends: each span fed as it ends (lookahead none), withheld records once
    released, the rest when the stream ends."""
    linker = StreamLinker()
    for span in spans:
        call = linker.feed(span)
        if call is not None:
            yield act_event(span, call)
            yield observe_event(span, call)
        for held, released in linker.released():
            yield act_event(held, released)
            yield observe_event(held, released)
    for held, released in linker.flush_held():
        yield act_event(held, released)
        yield observe_event(held, released)


def _stream_events(spans: list[Span], lookahead: int | None) -> list[dict[str, Any]]:
    out = []
    for span, call in link_stream(spans, lookahead=lookahead):
        if call is not None:
            out += [act_event(span, call), observe_event(span, call)]
    return out


def _can_end_in(order: list[Span]) -> bool:
    """Whether spans can end (and reach a live stream) in ``order``: in each process (resource) a span
    after the spans inside it; the other process's at any time."""
    at = {s.span_id: n for n, s in enumerate(order)}
    for span in order:
        parent = BY_ID.get(span.parent_span_id or "")
        if parent is not None and parent.resource == span.resource and at[parent.span_id] < at[span.span_id]:
            return False
    return True


WHOLE_INPUT: Final = ("convert --to events", "--sorted")
LIVE: Final = (*WHOLE_INPUT, "linked as each span is read", "a live processor")


def _every_path(order: list[Span], *, live: bool = True) -> dict[str, Any]:
    """The calls each path gives of ``order``, by path: those that read the whole input, and, when ``live``
    and the order is one a live stream can see (``_can_end_in``; each model call before the calls it asked
    for), those that link each span as it comes too."""
    found = {
        "convert --to events": _event_calls(_events_stream(iter(order))),
        "--sorted": _event_calls(to_events(order)),
    }
    if live and _can_end_in(order):
        found["linked as each span is read"] = _event_calls(_stream_events(order, 0))
        found["a live processor"] = _event_calls(_linker_events(order))
    return found


def test_the_run_holds_each_call_four_times() -> None:
    assert len(SDK_CALLS) == 3
    for call in SDK_CALLS:
        names = sorted(s.name for s in _records(call))
        # The SDK's span; the MCP client's; the server's mcp.server and its span; the server's answer.
        assert names == sorted(
            [call.name, f"{call.name}.tool", "mcp.server", f"{call.name}.tool", "ResponseStreamWriter"]
        )


def test_the_tree_gives_each_call_once() -> None:
    def tools(node: dict[str, Any]) -> list[dict[str, Any]]:
        own = [node] if node["type"] == "tool" else []
        return own + [t for child in node["children"] for t in tools(child)]

    nodes = tools(to_tree(RUN)["execution_tree"])
    assert sorted(n["call_id"] for n in nodes) == [c[0] for c in EXPECTED]
    assert {n["span_id"] for n in nodes} == {s.span_id for s in SDK_CALLS}


LEGS = [r for call in SDK_CALLS for r in _records(call)[1:]]


@pytest.mark.parametrize("call", range(3))
def test_every_arrival_order_of_one_calls_records(call: int) -> None:
    """Exhaustive: every order of the call's four records and the server's answer (the rest of the run in
    the order it ended around them, where the call's records were): the paths that read the whole input in
    each, the live ones in each a live stream can see."""
    records = _records(SDK_CALLS[call])
    at = min(RUN.index(r) for r in records)
    rest = [s for s in RUN if s not in records]
    found = [_every_path(rest[:at] + list(perm) + rest[at:]) for perm in itertools.permutations(records)]
    # Each path, in every order, gives exactly the calls that ran.
    assert all(calls == EXPECTED for paths in found for calls in paths.values())
    # Those a live stream can see: the MCP client's span before the SDK's (inside it, same process), the
    # server's span of the call before its mcp.server span; the rest in any order: 5! / (2 * 2).
    assert sum(tuple(paths) == LIVE for paths in found) == 30


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.permutations(RUN))
def test_any_arrival_order_of_the_legs(order: list[Span]) -> None:
    """The MCP client's and server's records anywhere (the rest of the run in its order): every path."""
    others = iter(s for s in RUN if s not in LEGS)
    found = _every_path([s if s in LEGS else next(others) for s in order])
    assert set(WHOLE_INPUT) <= set(found)
    assert all(calls == EXPECTED for calls in found.values()), found


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.permutations(RUN))
def test_any_arrival_order_of_the_run(order: list[Span]) -> None:
    """Every span anywhere: the paths that read the whole input (or a read-ahead as long)."""
    assert _every_path(list(order), live=False) == dict.fromkeys(WHOLE_INPUT, EXPECTED)


def _retraced(spans: list[Span], n: int) -> list[Span]:
    trace_id = f"{n:032x}"
    return [dataclasses.replace(s, trace_id=trace_id) for s in spans]


def _live(server: Any, trace_id: str) -> list[dict[str, Any]]:
    events = []
    for event in sse_stream(server, f"/api/traces/{trace_id}/stream", timeout=20):
        if event.event in ("act", "observe"):
            events.append(event.json())
            if sum(e["type"] == "observe" for e in events) == len(EXPECTED):
                break
    return events


@pytest.mark.processes
def test_the_live_server_stream_sends_each_call_once_whichever_records_come_first(tmp_path: Path) -> None:
    """The server's records posted first (they end, and are exported, before the client's), then the
    client's MCP spans, then the SDK's; and the reverse: the live stream of each trace and the all-traces
    stream give the three calls once, never a leg."""
    server = next(s.resource for s in RUN if s.name == "mcp.server")
    server_side = [s for s in RUN if s.resource == server]
    client_mcp = [s for s in RUN if s not in server_side and s.scope.startswith(sc.TRACELOOP_MCP_SCOPE)]
    sdk = [s for s in RUN if s not in server_side and s not in client_mcp]
    orders = [[server_side, client_mcp, sdk], [client_mcp, server_side, sdk], [sdk, client_mcp, server_side]]
    with running_server(tmp_path) as toolspan_server:
        for n, batches in enumerate(orders, start=1):
            trace_id = f"{n:032x}"
            first, *later = [_retraced(batch, n) for batch in batches]
            assert (
                toolspan_server.post_otlp(json.dumps(to_otlp_json(first)).encode(), "application/json")[0]
                == 200
            )
            # Stored (a 200 is a commit) before the others are sent: its own commit, read alone.
            for batch in later:
                assert (
                    toolspan_server.post_otlp(json.dumps(to_otlp_json(batch)).encode(), "application/json")[0]
                    == 200
                )
            assert _event_calls(_live(toolspan_server, trace_id)) == EXPECTED, batches
            events = [
                json.loads(line)
                for line in toolspan_server.get(f"/api/traces/{trace_id}/events").splitlines()
            ]
            assert _event_calls(events) == EXPECTED
        every = []
        for event in sse_stream(toolspan_server, "/api/stream?from=start", timeout=20):
            if event.event in ("act", "observe"):
                every.append(event.json())
                if sum(e["type"] == "observe" for e in every) == len(EXPECTED) * len(orders):
                    break
        for n in range(1, len(orders) + 1):
            assert _event_calls(e for e in every if e["trace_id"] == f"{n:032x}") == EXPECTED


def _calls_of(spans: list[Span]) -> list[tuple[str, Any, Any]]:
    """(name, arguments, outcome) of every call the events of ``spans`` give."""
    calls = [(c[1], c[2], c[3]) for c in _event_calls(to_events(spans), linked=False)]
    return sorted(calls, key=lambda c: json.dumps(c, sort_keys=True))


@pytest.mark.parametrize("side", ["server", "client"])
def test_one_sides_mcp_records_alone_are_the_calls(side: str) -> None:
    """Without the SDK's spans: OpenLLMetry's MCP server records alone (a client that traces nothing), or
    its client records alone, are the calls: the inner arguments of ``{"tool_name", "arguments"}``, the
    inner result (the server's ``[{"type": "text", "content"}]``, the client's ``{"result"}``), the error."""
    server = next(s.resource for s in RUN if s.name == "mcp.server")
    if side == "server":
        spans = [s for s in RUN if s.resource == server]
    else:
        spans = [s for s in RUN if s.resource != server and s.scope.startswith(sc.TRACELOOP_MCP_SCOPE)]
    want = [(c[1], c[2], c[3]) for c in EXPECTED]
    assert _calls_of(spans) == sorted(want, key=lambda c: json.dumps(c, sort_keys=True))


@pytest.mark.processes
@pytest.mark.parametrize("view", ["ag-ui", "progress"])
def test_the_frontend_streams_wait_for_a_records_parents(view: str, tmp_path: Path) -> None:
    """The MCP server's records stored first, the stream open, then the client's: the AG-UI stream and the
    progress stream give each call once (the SDK's, with the model's id), never a leg, and never take one
    back (the stream runs to the run's end)."""
    server = next(s.resource for s in RUN if s.resource != SDK_CALLS[0].resource)
    first = [s for s in RUN if s.resource == server]
    rest = [s for s in RUN if s.resource != server]
    trace_id = RUN[0].trace_id
    with running_server(tmp_path) as toolspan_server:

        def post(spans: list[Span]) -> None:
            body = json.dumps(to_otlp_json(spans)).encode()
            assert toolspan_server.post_otlp(body, "application/json")[0] == 200

        post(first)
        later = threading.Timer(1.0, post, [rest])
        later.start()
        data: list[dict[str, Any]] = []
        try:
            for e in sse_stream(toolspan_server, f"/api/traces/{trace_id}/{view}/stream", timeout=30):
                if e.data.startswith("{"):
                    data.append(e.json())
                    if (
                        data[-1].get("type") == "RUN_FINISHED"
                        or data[-1].get("event", {}).get("type") == "done"
                    ):
                        break
        finally:
            later.join()
    if view == "ag-ui":
        starts = [d["toolCallId"] for d in data if d["type"] == "TOOL_CALL_START"]
        assert sorted(starts) == [c[0] for c in EXPECTED]
        assert data[-1]["type"] == "RUN_FINISHED"
    else:
        calls = [d["event"]["call"] for d in data if d.get("event", {}).get("type") == "tool:start"]
        assert sorted(c["id"] for c in calls) == [c[0] for c in EXPECTED]
        assert {c["execution_id"] for c in calls} == {f"exec_{s.span_id}" for s in SDK_CALLS}
