"""Golden outputs of every view for one deterministic scenario.

Two sources of the same scenario (see ``tests.support.bridge_data.scenario``): spans built by hand following
the span contract (``hand_*.json``), and the scenario run through toolspan's own instrumentation with
deterministic ids and clock (``instrumented_*.json``; skipped until the public API is there). Regenerate with
``TOOLSPAN_UPDATE_GOLDEN=1``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

import pytest

import toolspan
from tests.support.bridge_data import scenario, validate
from tests.support.paths import TESTS
from toolspan.bridge.model import Span
from toolspan.bridge.views import (
    audit,
    mark_pages,
    page_delta,
    to_ag_ui,
    to_ai_sdk,
    to_events,
    to_page,
    to_pages,
    to_plans,
    to_progress,
    to_timelines,
    to_trees,
)
from toolspan.policy import parse_policy

GOLDEN = TESTS / "golden"
UPDATE_ENV = "TOOLSPAN_UPDATE_GOLDEN"

GOLDEN_POLICY = parse_policy(
    {
        "id": "travel-desk",
        "version": "4",
        "rules": [
            {"id": "no-deletes", "kind": "tools", "deny": ["delete_*"]},
            {"id": "booker-tools", "kind": "tools", "agent": "booker", "allow": ["check_*", "reserve_*"]},
            {"id": "one-night", "kind": "budget", "tool": "reserve_hotel", "max_calls": 1},
            {"id": "email-approved", "kind": "approval", "tools": ["send_email"]},
            {"id": "short-rentals", "kind": "arguments", "tool": "rent_car", "path": "days", "max": 2},
        ],
    }
)


def _audits(spans: list[Span]) -> list[Any]:
    """The audit of the second turn alone (a small report: the example of docs/formats), then of both."""
    second = max(s.trace_id for s in spans)
    return [audit([s for s in spans if s.trace_id == second], GOLDEN_POLICY), audit(spans, GOLDEN_POLICY)]


def _no_stacks(pages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The page documents with recorded stack traces replaced: they name the files of the machine that ran."""
    for page in pages:
        for step in page["steps"]:
            error = step.get("error")
            if error is not None and error.get("stack"):
                error["stack"] = "<stack trace>"
    return pages


def _last_deltas(spans: list[Span]) -> list[dict[str, Any]]:
    """Per trace, what its live page stream sends when its last span to end arrives (stacks replaced)."""
    out = []
    for page in to_pages(spans):
        trace = sorted(
            (s for s in spans if s.trace_id == page["trace_id"]), key=lambda s: s.end_ns or s.start_ns
        )
        old, new = to_page(trace[:-1], live=True), to_page(trace, live=True)
        out.append(page_delta(*_no_stacks([old, new])))
    return out


VIEWS: dict[str, tuple[str, Callable[[list[Span]], Any]]] = {
    "events": ("events", to_events),
    "timeline": ("timeline", to_timelines),
    "tree": ("tree", to_trees),
    "plans": ("plans", to_plans),
    "progress": ("progress", to_progress),
    "audit": ("audit", _audits),
    "ag-ui": ("ag-ui", to_ag_ui),
    "ai-sdk": ("ai-sdk", to_ai_sdk),
    "page": ("page", lambda spans: _no_stacks(to_pages(spans))),
    "page-delta": ("page-delta", _last_deltas),
    "audit_page": (
        "page",
        lambda spans: _no_stacks(mark_pages(to_pages(spans), audit(spans, GOLDEN_POLICY))),
    ),
}


def _validate_view(view: str, output: Any) -> None:
    schema = VIEWS[view][0]
    for item in output if isinstance(output, list) else [output]:
        validate(schema, item)


def _as_json(output: Any) -> Any:
    """``output`` as it reads back from a JSON file (tuples become lists, ...)."""
    return json.loads(json.dumps(output, ensure_ascii=False))


def _golden(name: str, output: Any) -> Any:
    """The stored golden document ``name`` (rewritten from ``output`` first when UPDATE_ENV=1)."""
    import os

    path = GOLDEN / f"{name}.json"
    if os.environ.get(UPDATE_ENV) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(output, indent=1, sort_keys=True, ensure_ascii=False) + "\n", "utf-8")
    assert path.exists(), f"{path} missing: run with {UPDATE_ENV}=1"
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("view", list(VIEWS))
def test_hand_built_scenario_golden(view: str) -> None:
    output = VIEWS[view][1](scenario())
    _validate_view(view, output)
    assert _as_json(output) == _golden(f"hand_{view}", output)


def instrumented_scenario() -> list[Span]:
    """Run the scenario through toolspan's public API; return its spans, one of them never ended."""
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

    from toolspan.bridge.readers import from_readable_spans
    from toolspan.testing import capture_spans

    ts: Any = toolspan

    class Started(SpanProcessor):
        def __init__(self) -> None:
            self.spans: list[ReadableSpan] = []

        def on_start(self, span: Any, parent_context: Any = None) -> None:
            self.spans.append(span)

    @ts.tool
    def search_flights(city: str) -> dict[str, Any]:
        return {"flights": ["AF1"]}

    @ts.tool
    def check_availability(flight: str) -> bool:
        raise ValueError("sold out")

    @ts.tool
    async def reserve_hotel(night: int) -> dict[str, int]:
        for _ in range(3 - night):  # the second call finishes first
            await asyncio.sleep(0)
        return {"room": 100 + night}

    async def booker_work(flight: str) -> None:
        ts.thought("Check availability, then reserve two hotels in parallel.")
        with contextlib.suppress(ValueError):
            check_availability(flight)
        await asyncio.gather(reserve_hotel(1), reserve_hotel(2))

    @ts.tool
    def book_trip(flight: str) -> str:
        with ts.plan("booking"), ts.agent("booker", input="Book flight AF1 and a hotel") as run:
            asyncio.run(booker_work(flight))
            run.set_output("Flight booked, hotel reserved twice")
        return "booked"

    @ts.tool
    def delete_files(path: str) -> None:
        ts.record_permission_required()
        ts.record_permission_decided("deny", "Deleting is not allowed")
        raise ts.ToolDenied("Deleting is not allowed")

    @ts.tool
    def send_email(to: str) -> dict[str, bool]:
        ts.record_permission_required()
        ts.record_permission_decided("allow", "ok", by="alice")
        return {"sent": True}

    @ts.tool
    def rent_car(days: int) -> dict[str, str]:
        return {"car": "C3"}

    @ts.tool
    def notify(msg: str) -> Any:
        yield "sending"
        yield "sent"

    with capture_spans(deterministic=True) as finished:
        started = Started()
        finished.provider.add_span_processor(started)
        with ts.agent("planner", input="Plan a trip to Paris", conversation_id="conv-1") as run:
            ts.thought("Search flights first, then book.")
            with ts.tool_call_id("toolu_01"):
                search_flights("Paris")
            book_trip("AF1")
            with contextlib.suppress(ts.ToolDenied):
                delete_files("/tmp")
            send_email("me")
            run.set_output("Your trip is booked.")
        with ts.agent("planner", input="Also rent a car", conversation_id="conv-1") as run:
            rent_car(3)
            pending = notify("car")
            next(pending)  # started, never finished: its span stays open
            run.set_output("The car is rented.")
        done = list(finished())
        ended = {s.context.span_id for s in done}
        open_spans = [s for s in started.spans if s.context.span_id not in ended]
        spans = from_readable_spans([*done, *open_spans])
        pending.close()
    return spans


@pytest.mark.parametrize("view", list(VIEWS))
def test_instrumented_scenario_golden(view: str) -> None:
    spans = instrumented_scenario()
    output = VIEWS[view][1](spans)
    _validate_view(view, output)
    assert _as_json(output) == _golden(f"instrumented_{view}", output)


def test_hand_and_instrumented_scenarios_tell_the_same_story() -> None:

    def story(spans: list[Span]) -> list[Any]:
        (doc,) = to_timelines(spans)
        items = [
            (i["type"], i.get("content"), i.get("toolName"), i.get("toolOutput"), i.get("isError"))
            for i in doc["timeline"]
        ]
        progress = [
            (e["event"]["type"], (e["event"].get("call") or {}).get("state")) for e in to_progress(spans)
        ]
        return [items, progress]

    assert story(instrumented_scenario()) == story(scenario())
