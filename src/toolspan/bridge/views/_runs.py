"""Runs: the turns of a conversation as the agent-frontend protocols see them (AG-UI, the AI SDK UI stream).

A *run* is one turn: an agent span with no agent above it (run id ``<trace id>-<span id>``), or a whole
trace that has no agent span (run id = the trace id). Its thread is the conversation
(``gen_ai.conversation.id`` or OpenInference ``session.id``, else the trace id). Runs follow each other
in order of their trace's first span, then of their start; a run's items never interleave with another
run's.

Items of a run, in time order (ties: ends before starts, then span order):

- ``user``: the user's message (at the run's start), ``{id, text}``;
- ``thought``: a ``toolspan.thought`` event, ``{id, text}``;
- ``step_start`` / ``step_end``: a sub-agent or a plan inside the run, ``{name, span_id}``;
- ``tool_start``: the model's tool call, ``{call_id, name, input, parent}`` (``parent``: the message id of
  the model call that asked for it, or ``None``);
- ``approval``: an approval asked (``decision`` ``None``) or decided, ``{call_id, decision, note, by,
  latency_ms, arguments}``;
- ``tool_end``: the call's outcome, ``{call_id, message_id, state, output, error, execution_id}``;
- ``text``: an assistant message: a model call's output (id ``msg-<llm span id>``, at the call's end), or
  the run's answer when no model output under the run already said it (id ``msg-<agent span id>``).

The run's end: ``status`` ``completed``, ``error`` (the agent span failed), ``waiting`` (it never ended and a
tool waits for an approval) or ``interrupted`` (it never ended, or left a tool that never ended).

Items made up for spans that never ended (a tool's ``SEALED`` outcome, a step's end, the run's end while the
agent span is open) are *provisional*: a live stream holds them back until the trace is final. Items of
a span whose run is not known yet are *unplaced*: the start of an MCP record whose parents are not all in
the trace (maybe a transport leg of a call above it: ``TraceIndex.undecided``), and a tool call, step or
model call whose line of parents is cut below any agent (its agent's record may still be on its way:
``TraceIndex.unplaced``). A live stream holds back their run until their parents come, or the trace is
final. ``open_key`` names the span an item belongs to while it is still open (tools, model calls), so a
live stream can cut before anything whose place that span's end could still change.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from toolspan import semconv as sc
from toolspan._util.words import ALLOW
from toolspan.bridge._coalesce import coalesce
from toolspan.bridge.facts import (
    AGENT,
    LLM,
    PLAN,
    TOOL,
    ModelCall,
    Usage,
    agent_name,
    approvals,
    plan_name,
    thoughts,
)
from toolspan.bridge.internal import CONVERSATION_KEYS, edited_input, total_usage
from toolspan.bridge.model import Span
from toolspan.bridge.views._common import AGENTS, TraceIndex, group_traces, turn_messages
from toolspan.bridge.views._progress import AUTO_SEAL_RESULT

__all__ = ["Item", "Run", "conversation_id", "message_id", "to_runs"]

SEALED_ERROR: Final = str(AUTO_SEAL_RESULT["error"])


@dataclass(slots=True)
class Item:
    time_ns: int
    rank: int
    index: int
    sub: int
    kind: str
    data: dict[str, Any]
    provisional: bool = False
    # Its run is not known yet: its line of parents is cut below any agent (``TraceIndex.unplaced``), or
    # it is an MCP record whose parents are not all here (``TraceIndex.undecided``).
    unplaced: bool = False
    # The execution id of the span this item belongs to while that span is open, else None.
    open_key: str | None = None
    # While that span is open, the earliest time its end can have (its start or its latest event).
    open_bound: int = 0


@dataclass(slots=True)
class Run:
    thread_id: str
    run_id: str
    trace_id: str
    start_ns: int
    end_ns: int
    status: str
    error: str | None
    answer: str | None
    usage: Usage | None
    ended: bool
    items: list[Item] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)


def conversation_id(trace: list[Span]) -> str:
    """The conversation of a trace: ``gen_ai.conversation.id``, ``session.id``, else the trace id."""
    for key in CONVERSATION_KEYS:
        for span in trace:
            value = span.attributes.get(key)
            if value is not None and value != "":
                return str(value)
    return trace[0].trace_id


def message_id(span_id: str) -> str:
    """The message id of the text a span produced (a model call's output, an agent's answer, its deltas)."""
    return f"msg-{span_id}"


def _turn_of(index: TraceIndex, i: int, turns: list[int]) -> int | None:
    turn = index.nearest(i, AGENTS)
    while turn is not None and turn not in turns:
        turn = index.nearest(turn, AGENTS)
    if turn is not None or not turns:
        return turn
    span = index.spans[i]
    within = [t for t in turns if index.spans[t].start_ns <= span.start_ns]
    return within[-1] if within else turns[0]


def _end_at(span: Span, start_at: int) -> tuple[int, int]:
    end = span.end_ns if span.end_ns is not None else start_at
    at = max(end, start_at)
    return at, (1 if at > start_at else 4)


def _tool_items(index: TraceIndex, i: int, trace_end: int) -> list[Item]:
    span = index.spans[i]
    tc = index.tool_calls()[i]
    key = tc.execution_id if span.end_ns is None else None
    marks = approvals(span)
    bound = max([span.start_ns, *(m.time_ns for m in marks)])
    parent = None if tc.requested_by is None else message_id(tc.requested_by)
    # The model's arguments at the start; a decision that edited them brings the edit (its approval item).
    asked = tc.model_input if tc.edit is not None and tc.edit.at_ns is not None else tc.input
    items = [
        Item(
            span.start_ns,
            3,
            i,
            0,
            "tool_start",
            {"call_id": tc.call_id, "name": tc.name, "input": asked, "parent": parent},
            open_key=key,
            open_bound=bound,
            # Maybe an MCP call's transport leg, or in another run: a live stream waits for its parents.
            unplaced=i in index.undecided or index.unplaced(i),
        )
    ]
    for n, mark in enumerate(marks):
        data = {
            "call_id": tc.call_id,
            "name": tc.name,
            "decision": mark.decision,
            "note": mark.note,
            "by": mark.by,
            "latency_ms": mark.latency_ms,
            "arguments": edited_input(span) if mark.decision == ALLOW else None,
        }
        if mark.decision == ALLOW and tc.edit is not None and data["arguments"] is not None:
            data["edited"] = tc.edit.mark()  # the body received the arguments: who, when, the model's
        items.append(Item(mark.time_ns, 3, i, 1 + n, "approval", data, open_key=key, open_bound=bound))
    if span.end_ns is None and marks and marks[-1].decision is None:
        return items  # still waiting for its decision: no outcome yet
    state = tc.state
    if span.end_ns is None:
        at, rank = max(trace_end, bound), 4
        outcome = {"state": sc.STATE_SEALED, "output": None, "error": SEALED_ERROR}
    else:
        at, rank = _end_at(span, span.start_ns)
        outcome = {"state": state, "output": tc.output if tc.error is None else None, "error": tc.error}
    data = {
        "call_id": tc.call_id,
        "message_id": f"result-{span.span_id}",
        "execution_id": tc.execution_id,
        **outcome,
    }
    items.append(Item(at, rank, i, 100, "tool_end", data, provisional=span.end_ns is None))
    return items


def _span_items(index: TraceIndex, i: int, turn: int | None, trace_end: int) -> list[Item]:
    """What one span below a turn adds to it: a tool call, a step (agent, plan) or a model call's text."""
    span, kind = index.spans[i], index.kinds[i]
    if kind == TOOL:
        return _tool_items(index, i, trace_end)
    if kind in (AGENT, PLAN):
        name = agent_name(span) if kind == AGENT else plan_name(span)
        step = {"name": name, "span_id": span.span_id}
        at, rank = _end_at(span, span.start_ns)
        if span.end_ns is None:
            at, rank = max(trace_end, span.start_ns), 6
        end = Item(at, rank, i, 101, "step_end", step, provisional=span.end_ns is None)
        return [Item(span.start_ns, 2, i, 0, "step_start", step, unplaced=index.unplaced(i)), end]
    if kind != LLM or not index.is_model_call(i) or index.nearest(i, AGENTS) != turn:
        return []
    if span.end_ns is None:
        # Its output comes at its end: nothing after its start is settled before that.
        key = f"exec_{span.span_id}"
        bound = span.start_ns
        return [
            Item(bound, 3, i, 0, "llm_open", {}, open_key=key, open_bound=bound, unplaced=index.unplaced(i))
        ]
    output = index.model_output_text(i)
    if not output:
        return []
    at, rank = _end_at(span, span.start_ns)
    text = {"id": message_id(span.span_id), "text": output}
    return [Item(at, rank, i, 102, "text", text, unplaced=index.unplaced(i))]


def _status(items: list[Item], failed: bool, ended: bool) -> tuple[str, list[str]]:
    """A run's status, and the calls it waits on (an approval asked for, no decision, no end yet)."""
    waiting = [
        it.data["call_id"]
        for it in items
        if it.kind == "approval" and it.open_key is not None and it.data["decision"] is None
    ]
    waiting = [c for c in waiting if not any(o.kind == "tool_end" and o.data["call_id"] == c for o in items)]
    sealed = any(it.kind == "tool_end" and it.provisional for it in items)
    if failed:
        status = "error"
    elif not ended and waiting:
        status = "waiting"
    elif not ended or sealed:
        status = "interrupted"
    else:
        status = "completed"
    return status, sorted(set(waiting), key=waiting.index)


class _Runs:
    """The runs of one trace: a run per top agent (a turn), or the whole trace as one run without agents."""

    def __init__(self, trace: list[Span], thread: str) -> None:
        self.trace, self.thread = trace, thread
        self.index = index = TraceIndex(trace)
        self.trace_end = index.trace_end_ns()
        kinds = index.kinds
        turns = [i for i in range(len(trace)) if kinds[i] == AGENT and index.nearest(i, AGENTS) is None]
        self.turns = sorted(turns, key=lambda i: (trace[i].start_ns, i))
        self.models = index.model_calls()

    def items(self) -> tuple[dict[int | None, list[Item]], dict[int | None, list[tuple[int, str]]]]:
        """Each turn's items, and the texts its model calls said (by time)."""
        index, turns = self.index, self.turns
        by_turn: dict[int | None, list[Item]] = {t: [] for t in turns} if turns else {None: []}
        said: dict[int | None, list[tuple[int, str]]] = {}
        for i, span in enumerate(self.trace):
            turn = i if index.kinds[i] == AGENT and i in turns else _turn_of(index, i, turns)
            items = by_turn[turn]
            for n, (t, text) in enumerate(thoughts(span)):
                items.append(Item(t, 2, i, n, "thought", {"id": f"thought-{span.span_id}-{n}", "text": text}))
            if turn != i:
                added = _span_items(index, i, turn, self.trace_end)
                said.setdefault(turn, []).extend(
                    (it.time_ns, it.data["text"]) for it in added if it.kind == "text"
                )
                items.extend(added)
        return by_turn, said

    def whole_trace(self, items: list[Item]) -> Run:
        """The run of a trace without agents: the first model call's input is the user's."""
        trace, index = self.trace, self.index
        llms = sorted(
            (i for i in range(len(trace)) if index.is_model_call(i)), key=lambda i: (trace[i].start_ns, i)
        )
        failed = any(trace[r].status == "ERROR" for r in index.roots)
        return self.run(
            items,
            start=min(s.start_ns for s in trace),
            end=self.trace_end,
            run_id=trace[0].trace_id,
            user=(index.model_input_text(llms[0]) if llms else None, trace[0].trace_id),
            answer=None,
            ended=all(s.end_ns is not None for s in trace),
            error=next((trace[r].status_message for r in index.roots if trace[r].status_message), "")
            if failed
            else None,
            models=list(self.models.values()),
        )

    def turn(self, turn: int, items: list[Item], said: list[tuple[int, str]]) -> Run:
        """The run of one top agent's turn: its answer said last, unless its last model call said it."""
        index, span = self.index, self.trace[turn]
        user, answer = turn_messages(index, turn)
        ended, failed = span.end_ns is not None, span.status == "ERROR"
        end = span.end_ns if span.end_ns is not None else self.trace_end
        texts = [text for _, text in sorted(said)]
        if answer is not None and ended and (not texts or texts[-1] != answer):
            text = {"id": message_id(span.span_id), "text": answer}
            items.append(Item(max(end, span.start_ns), 7, turn, 103, "text", text))
        return self.run(
            items,
            start=span.start_ns,
            end=end,
            run_id=f"{span.trace_id}-{span.span_id}",
            user=(user, span.span_id),
            answer=answer,
            ended=ended,
            error=span.status_message if failed else None,
            models=[m for i, m in self.models.items() if _turn_of(index, i, self.turns) == turn],
        )

    def run(
        self,
        items: list[Item],
        *,
        start: int,
        end: int,
        run_id: str,
        user: tuple[str | None, str],
        answer: str | None,
        ended: bool,
        error: str | None,
        models: list[ModelCall],
    ) -> Run:
        """A run of ``items``; ``user``: the user's text (if any) and the key of its message id; ``error``:
        ``None`` unless it failed (then its message, maybe empty)."""
        text, user_key = user
        if text is not None:
            items.insert(0, Item(start, 0, -1, 0, "user", {"id": f"user-{user_key}", "text": text}))
        status, waiting = _status(items, error is not None, ended)
        items.sort(key=lambda it: (it.time_ns, it.rank, it.index, it.sub))
        return Run(
            thread_id=self.thread,
            run_id=run_id,
            trace_id=self.trace[0].trace_id,
            start_ns=start,
            end_ns=max(end, start),
            status=status,
            error=error or None,
            answer=answer,
            usage=total_usage(models) if models else None,
            ended=ended,
            items=items,
            waiting=waiting,
        )

    def runs(self) -> list[Run]:
        by_turn, said = self.items()
        runs = [
            self.whole_trace(items) if turn is None else self.turn(turn, items, said.get(turn, []))
            for turn, items in by_turn.items()
        ]
        runs.sort(key=lambda r: (r.start_ns, r.run_id))
        return runs


def _trace_runs(trace: list[Span], thread: str) -> list[Run]:
    return _Runs(trace, thread).runs()


def to_runs(spans: Iterable[Span]) -> list[Run]:
    """The runs of all given traces: conversations in order of their first trace, runs in time order."""
    threads: dict[str, list[list[Span]]] = {}
    for trace in group_traces(coalesce(spans)):
        threads.setdefault(conversation_id(trace), []).append(trace)
    runs: list[Run] = []
    for thread, traces in threads.items():
        for trace in sorted(traces, key=lambda t: (t[0].start_ns, t[0].trace_id)):
            runs.extend(_trace_runs(trace, thread))
    return runs
