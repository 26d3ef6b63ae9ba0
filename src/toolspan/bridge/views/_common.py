"""Helpers shared by the views: time formats, traces and their parent/child structure."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Sequence
from typing import Any, Final, overload

from toolspan.bridge.facts import (
    AGENT,
    CHAIN,
    LLM,
    OTHER,
    PLAN,
    TOOL,
    ModelCall,
    ToolCallRecord,
    classify,
    model_call,
    tool_call,
    tool_name,
)
from toolspan.bridge.internal import (
    agent_input_text,
    agent_output_text,
    calls_model,
    completed,
    is_transport_record,
)
from toolspan.bridge.link import link_tool_calls, tool_legs
from toolspan.bridge.model import Span

SCHEMA_VERSION: Final = "1.1"

NS_PER_MS: Final = 1_000_000


def ms(ns: int) -> int:
    """Integer milliseconds since the epoch (floor)."""
    return ns // NS_PER_MS


def duration_ms(start_ns: int, end_ns: int) -> int:
    """Whole milliseconds between two times, rounded half up, never negative."""
    return max(0, (end_ns - start_ns + NS_PER_MS // 2) // NS_PER_MS)


@functools.lru_cache(maxsize=4096)
def _second(seconds: int) -> str:
    """``iso``'s text of a whole second (a trace's times share few: each is formatted once)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


@overload
def iso(ns: int) -> str: ...
@overload
def iso(ns: int | None) -> str | None: ...
def iso(ns: int | None) -> str | None:
    """ISO 8601 UTC with microseconds, e.g. ``2023-11-14T22:13:20.000001Z`` (``None`` for ``None``)."""
    if ns is None:
        return None
    seconds, rest = divmod(ns, 1_000_000_000)
    return f"{_second(seconds)}.{rest // 1000:06d}Z"


def summary(value: Any, limit: int = 200) -> str | None:
    """A short one-line text for ``value`` (truncated with an ellipsis)."""
    if value is None:
        return None
    text = (
        value
        if isinstance(value, str)
        else json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    )
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def group_traces(spans: Sequence[Span]) -> list[list[Span]]:
    """Split a coalesced list into traces (each keeps the list order), ordered by first span."""
    groups: dict[str, list[Span]] = {}
    for span in spans:
        group = groups.get(span.trace_id)
        if group is None:
            groups[span.trace_id] = [span]
        else:
            group.append(span)
    return list(groups.values())


class TraceIndex:
    """Parent/child structure of one trace's coalesced records (indices into ``spans``).

    ``parent[i]`` is the record of ``spans[i].parent_span_id`` (the first record with that id), or ``None``
    for a root, an orphan (``orphan[i]``) or the record whose parent link was cut to break a cycle
    (``cycle[i]``). ``order`` is a pre-order walk from the roots in which every record appears once.
    """

    def __init__(self, spans: Sequence[Span]) -> None:
        self.spans = spans
        n = len(spans)
        self.kinds = [classify(s) for s in spans]
        first: dict[str, int] = {}
        for i, span in enumerate(spans):
            first.setdefault(span.span_id, i)
        self.first = first
        parent: list[int | None] = [None] * n
        self.orphan = [False] * n
        self.cycle = [False] * n
        for i, span in enumerate(spans):
            pid = span.parent_span_id
            if pid is None:
                continue
            p = first.get(pid)
            if p is None:
                self.orphan[i] = True
            else:
                parent[i] = p
        self.parent = parent
        self._break_cycles()
        children: list[list[int]] = [[] for _ in range(n)]
        for i, p in enumerate(self.parent):
            if p is not None:
                children[p].append(i)
        self.children = children
        self.roots = [i for i in range(n) if self.parent[i] is None]
        self.order = self._preorder()
        # An LLM span that calls no model (``calls_model``: LlamaIndex's request-building step) keeps the kind
        # its tracer states, as ``convention_kinds`` below; its role is a step's: it is no model call.
        requests_only = [i for i, span in enumerate(spans) if self.kinds[i] == LLM and not calls_model(span)]
        for i in requests_only:
            self.kinds[i] = CHAIN
        # A model call recorded inside another (a framework's span around its client library's: Google
        # ADK's ``generate_content`` under its legacy ``call_llm``, MLflow's chat completion under the
        # OpenAI Agents SDK's generation) keeps its kind, and its requests are read; it is the same call,
        # counted once, by the outer one.
        self.inner_model_calls = frozenset(
            i
            for i, p in enumerate(self.parent)
            if self.kinds[i] == LLM and p is not None and self.kinds[p] == LLM
        )
        # A call recorded twice, nested (AutoGen's own span inside OpenInference's): the outer one counts.
        self.legs = tool_legs(spans, self.kinds, self.parent)
        for inner in self.legs:
            self.kinds[inner] = OTHER
        self._demote_mcp_legs()
        # ``convention_kinds``: each record's kind as its convention says (what views report as ``kind``,
        # and what links are read with, as a stream reads them); ``kinds``: its role in the run.
        self.convention_kinds = list(self.kinds)
        for i in requests_only:
            self.convention_kinds[i] = LLM
        self._chain_runs()
        self._read: dict[int, ToolCallRecord] | None = None
        self._unplaced: list[bool] | None = None
        self._calls: dict[int, ToolCallRecord] | None = None
        self._models: dict[int, ModelCall] | None = None

    def _demote_mcp_legs(self) -> None:
        """A transport library's record of a tool call (``is_transport_record``, a convention's
        ``Dialect.transport_record``: an MCP client's or server's) under a tool span of the same tool is a
        transport leg of that call (the call is counted once, by the tool that made it): it
        becomes ``other``. Alone (a client that traces nothing), the record stays the tool call.
        ``undecided``: the records with no such tool above them whose line of parents is cut by a span
        not (yet) in the trace (a live stream withholds their events until that span arrives)."""
        kinds = list(self.kinds)
        undecided = set()
        for i, span in enumerate(self.spans):
            if kinds[i] != TOOL or not is_transport_record(span):
                continue
            above = self.nearest(i, TOOLS, kinds)
            if above is not None and tool_name(self.spans[above]) == tool_name(span):
                self.kinds[i] = OTHER
            elif above is None and self.orphan[self._top(i)]:
                undecided.add(i)
        self.undecided = frozenset(undecided)

    def _top(self, i: int) -> int:
        """The highest ancestor of ``i`` in the trace (``i`` itself for a root)."""
        p = self.parent[i]
        while p is not None:
            i, p = p, self.parent[p]
        return i

    def _chain_runs(self) -> None:
        """A trace with no agent span whose model calls run inside chain spans (LlamaIndex's
        ``FunctionAgent.run`` workflow, DSPy's ``ReAct.forward``: OpenInference CHAIN spans) is run by the
        outermost of those chains: it plays the agent's role in the views (its kind stays ``chain``)."""
        if AGENT in self.kinds:
            return
        runs = set()
        for i, kind in enumerate(self.kinds):
            if kind != LLM:
                continue
            outermost = None
            p = self.parent[i]
            while p is not None:
                if self.kinds[p] == CHAIN:
                    outermost = p
                p = self.parent[p]
            if outermost is not None:
                runs.add(outermost)
        for i in runs:
            self.kinds[i] = AGENT

    def is_model_call(self, i: int) -> bool:
        """Whether record ``i`` is a model call counted on its own (an LLM span not inside another)."""
        return self.kinds[i] == LLM and i not in self.inner_model_calls

    def model_input_text(self, i: int) -> str | None:
        """What model call ``i`` was asked: its own messages, else those of a call recorded inside it."""
        return next(filter(None, (agent_input_text(self.spans[j]) for j in (i, *self._inner_of(i)))), None)

    def model_output_text(self, i: int) -> str | None:
        """What model call ``i`` answered: its own messages, else those of a call recorded inside it."""
        return next(filter(None, (agent_output_text(self.spans[j]) for j in (i, *self._inner_of(i)))), None)

    def model_calls(self) -> dict[int, ModelCall]:
        """The model call of every counted LLM record (computed once); two chain spans above may complete
        it, and so may the model calls recorded inside it (what the outer span lacks, the inner one says)."""
        if self._models is None:
            models = {}
            for i, kind in enumerate(self.kinds):
                if kind == LLM and i not in self.inner_model_calls:
                    above: list[Span] = []
                    p = self.parent[i]
                    while p is not None and len(above) < 2 and self.kinds[p] not in (AGENT, TOOL, LLM):
                        above.append(self.spans[p])
                        p = self.parent[p]
                    call = model_call(self.spans[i], above)
                    for j in self._inner_of(i):
                        call = completed(call, model_call(self.spans[j]))
                    models[i] = call
            self._models = models
        return self._models

    def _inner_of(self, i: int) -> list[int]:
        """The model calls recorded inside model call ``i``, outermost first."""
        out = []
        stack = [c for c in self.children[i] if c in self.inner_model_calls]
        while stack:
            j = stack.pop(0)
            out.append(j)
            stack.extend(c for c in self.children[j] if c in self.inner_model_calls)
        return out

    def recorded_calls(self) -> dict[int, ToolCallRecord]:
        """The tool call of every tool record as it recorded it (``tool_call``, not linked; read once)."""
        if self._read is None:
            kinds, spans = self.convention_kinds, self.spans
            self._read = {i: tool_call(spans[i]) for i in range(len(spans)) if kinds[i] == TOOL}
        return self._read

    def tool_calls(self) -> dict[int, ToolCallRecord]:
        """The tool call of every tool record, linked to the model call that asked for it (computed once)."""
        if self._calls is None:
            read = self.recorded_calls()
            self._calls = link_tool_calls(self.spans, self.convention_kinds, self.parent, self.legs, read)
        return self._calls

    def _break_cycles(self) -> None:
        n = len(self.spans)
        parent = self.parent
        # state: 0 unknown, 1 on the current walk, 2 reaches a root.
        state = [0] * n
        for start in range(n):
            if state[start]:
                continue
            path = []
            node: int | None = start
            while node is not None and state[node] == 0:
                state[node] = 1
                path.append(node)
                node = parent[node]
            if node is not None and state[node] == 1:
                # A cycle: cut the link of its earliest record (smallest index = earliest start).
                loop = path[path.index(node) :]
                cut = min(loop)
                parent[cut] = None
                self.cycle[cut] = True
            for i in path:
                state[i] = 2

    def _preorder(self) -> list[int]:
        order: list[int] = []
        stack = list(reversed(self.roots))
        while stack:
            i = stack.pop()
            order.append(i)
            stack.extend(reversed(self.children[i]))
        return order

    def nearest(self, i: int, kinds: frozenset[str], roles: Sequence[str] | None = None) -> int | None:
        """The closest proper ancestor of ``i`` whose kind is in ``kinds`` (``roles``: kinds to read
        instead of ``self.kinds``)."""
        roles = self.kinds if roles is None else roles
        p = self.parent[i]
        while p is not None:
            if roles[p] in kinds:
                return p
            p = self.parent[p]
        return None

    def unplaced(self, i: int) -> bool:
        """Whether a span not (yet) in the trace may put ``i`` in another run: its line of parents is cut
        below any agent (an agent's or a model call's record still on its way, or a parent in another
        service). Found for every record in one walk, the first time it is asked."""
        if self._unplaced is None:
            cut = [False] * len(self.spans)  # the line from the record up is cut, with no agent above the cut
            for j in self.order:  # parents first
                p = self.parent[j]
                cut[j] = self.orphan[j] if p is None else cut[p] and self.kinds[p] not in AGENTS
            self._unplaced = cut
        return self._unplaced[i]

    def trace_end_ns(self) -> int:
        """The latest time recorded in the trace (an end, or a start when nothing ended later)."""
        return max((s.end_ns if s.end_ns is not None else s.start_ns) for s in self.spans)


AGENTS: Final = frozenset({AGENT})
PLANS: Final = frozenset({PLAN})
TOOLS: Final = frozenset({TOOL})


def turn_messages(index: TraceIndex, agent: int) -> tuple[str | None, str | None]:
    """What the user asked agent ``agent`` and what it answered: its own messages, else those of its model
    calls (its own, or a nested agent's when it has none: a workflow agent)."""
    span = index.spans[agent]
    user = agent_input_text(span)
    answer = agent_output_text(span)
    if user is not None and answer is not None:
        return user, answer
    llms = [
        i for i in range(len(index.spans)) if index.is_model_call(i) and index.nearest(i, AGENTS) == agent
    ]
    if not llms:
        # A workflow agent whose model calls run in a nested agent (OpenAI Agents SDK, LangGraph).
        llms = [i for i in range(len(index.spans)) if index.is_model_call(i) and _under(index, i, agent)]
        llms.sort(key=lambda i: (index.spans[i].start_ns, i))
    if user is None and llms:
        user = index.model_input_text(llms[0])
    ended = [i for i in llms if index.spans[i].end_ns is not None]
    if answer is None and ended:
        last = max(ended, key=lambda i: (index.spans[i].end_ns, i))
        answer = index.model_output_text(last)
    return user, answer


def _under(index: TraceIndex, i: int, ancestor: int) -> bool:
    p = index.parent[i]
    while p is not None:
        if p == ancestor:
            return True
        p = index.parent[p]
    return False


def camel_keys(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with snake_case keys in camelCase (the plans' and timeline's key style)."""
    return {
        "".join(w.capitalize() if n else w for n, w in enumerate(k.split("_"))): v for k, v in fields.items()
    }
