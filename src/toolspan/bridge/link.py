"""Link each executed tool call to the model call (generation) that asked for it.

One implementation for every path: a ``RequestIndex`` per trace holds the tool calls its model calls
asked for (``_requests.requested_calls``), each used once, and the parent links of the spans it has seen
(for the agent scope below). The views build one over a whole trace (``link_tool_calls``); a stream
(``toolspan convert --to events``, the live processor) keeps one per trace in a bounded ``StreamLinker``
and feeds it spans as they come: a model call ends before the tools it asked for start, so its requests
are known when their tool spans arrive, without holding the file.

A tool span is matched, in this order, to
1. the request with its own model call id (on the span, in a ToolMessage it returned, or on the span that
   dispatched it: LangGraph's ``tools`` task records ``{"tool_call": {"id": ...}}`` as its input);
2. the first unused request of the same name and arguments;
3. the first unused request of the same name, when the span's arguments are lossy (a bare value for a
   one-argument tool, or none at all).
Candidates are requests of model calls that started before the tool span, under the same agent run (the
nearest agent ancestor the index knows of; a stream that has not seen the agent span yet scopes to the
trace), latest model call first. A match fills in the model's call id and the arguments as the model sent
them when the span lacks them, and sets ``requested_by`` to the model call's span id. A tool span no request
matches is requested by the latest model call before it, in the same scope, that stopped to call tools
without recording them (Spring AI's: ``asks_unrecorded_calls``); that fills in nothing else.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from toolspan import semconv as sc
from toolspan._util import ids
from toolspan._util.records import quick_replace
from toolspan.bridge.facts import (
    AGENT,
    LLM,
    TOOL,
    Requested,
    ToolCallRecord,
    classify,
    requested_calls,
    tool_call,
    tool_error,
    tool_name,
    tool_state,
)
from toolspan.bridge.facts import call_id as tool_call_id
from toolspan.bridge.internal import (
    asks_unrecorded_calls,
    dispatched_id,
    earlier_requests,
    is_event_record,
    is_transport_record,
    normal_arguments,
    normal_result,
    sent_responses,
    unwrapped_result,
)
from toolspan.bridge.model import Span

__all__ = ["RequestIndex", "StreamLinker", "link_stream", "link_tool_calls", "tool_legs"]

# Spans a stream reads ahead before it links a tool span: its model call may come later in the file, in
# the same export request (the SDK's batch processor sends up to 512 spans a request, grouped by scope).
LOOKAHEAD = 1024
# A stream's bounds: traces whose index is kept (the least recently noted dropped first; more than one
# read-ahead can touch), entries (parent links, requests) over all of them, and per trace the model
# requests and parent links kept (the oldest dropped first). Read when a stream starts.
MAX_TRACES = 2 * LOOKAHEAD
MAX_ENTRIES = 1 << 17
MAX_REQUESTS = 4096
MAX_PARENTS = 16384


def _own_id(call: ToolCallRecord) -> str | None:
    return None if call.call_id == ids.synthetic_call_id(call.span.span_id) else call.call_id


def dispatch_id(parent: Span | None) -> str | None:
    """The model's call id recorded by the span that dispatched a tool (LangGraph's ``tools`` task,
    LlamaIndex's ``call_tool`` workflow step: each convention's ``dispatched_id_of``)."""
    return None if parent is None else dispatched_id(parent.attributes)


def _same_args(tool_args: Any, requested: Any) -> bool:
    if tool_args == requested:
        return True
    # A one-argument tool recorded as the bare value.
    return (
        isinstance(requested, Mapping)
        and len(requested) == 1
        and not isinstance(tool_args, Mapping)
        and next(iter(requested.values())) == tool_args
    )


def _lossy(tool_args: Any) -> bool:
    return not isinstance(tool_args, Mapping)


@dataclasses.dataclass(slots=True)
class _Request:
    llm: str  # the model call's span id
    start_ns: int
    order: int
    request: Requested


def _pick(candidates: list[_Request], test: Callable[[Requested], bool]) -> _Request | None:
    for item in candidates:
        if test(item.request):
            return item
    return None


def _match(candidates: list[_Request], name: str, args: Any, known_id: str | None) -> _Request | None:
    match = None
    if known_id is not None:
        match = _pick(candidates, lambda r: r.id == known_id)
    if match is None:
        match = _pick(candidates, lambda r: r.name == name and _same_args(args, r.arguments))
    if match is None and _lossy(args):
        match = _pick(candidates, lambda r: r.name == name)
    return match


class RequestIndex:
    """The model requests of one trace, each used once, and the parent links of the spans seen."""

    def __init__(self, max_requests: int | None = None, max_parents: int | None = None) -> None:
        self._requests: list[_Request] = []
        # Model calls that asked for tools without recording the requests: (span id, start).
        self._unrecorded: list[tuple[str, int]] = []
        self._parents: OrderedDict[str, tuple[str | None, bool]] = OrderedDict()
        self._dispatched: dict[str, str] = {}
        # Tool spans seen: name and parent; the failed ones' error (for a call recorded twice, nested).
        self._tools: dict[str, _ToolSeen] = {}
        self._tool_children: dict[str, list[str]] = {}
        self._tool_errors: dict[str, tuple[str, str]] = {}
        # The tools' responses the model calls sent back to the model, by call id (``answered``).
        self._responses: OrderedDict[str, Any] = OrderedDict()
        self._max_requests = max_requests
        self._max_parents = max_parents
        # The model calls indexed (span id, start) and the call ids their requests hold.
        self._model_calls: list[tuple[str, int]] = []
        self._asked_ids: OrderedDict[str | None, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._requests)

    def size(self) -> int:
        """Entries held: parent links, requests, responses and the model calls whose requests are
        unrecorded."""
        return len(self._parents) + len(self._requests) + len(self._responses) + len(self._unrecorded)

    def see(self, span: Span, kind: str) -> None:
        """Record ``span``'s parent link (and whether it is an agent), for the agent scope."""
        self._parents[span.span_id] = (span.parent_span_id, kind == AGENT)
        if self._max_parents is not None and len(self._parents) > self._max_parents:
            dropped, _ = self._parents.popitem(last=False)
            self._dispatched.pop(dropped, None)
            self._tool_errors.pop(dropped, None)
            self._tool_children.pop(dropped, None)
            self._tools.pop(dropped, None)

    def see_streamed(self, span: Span, kind: str) -> None:
        """What a stream needs besides ``see`` (the views read it off the whole trace): the model's call id
        a dispatching span recorded, and the tool spans (a call recorded twice, nested)."""
        if kind == TOOL:
            if span.span_id not in self._tools:
                self._tools[span.span_id] = _seen(span)
                if span.parent_span_id is not None:
                    self._tool_children.setdefault(span.parent_span_id, []).append(span.span_id)
            if span.end_ns is not None:
                state = tool_state(span)
                error = tool_error(span, state)
                if error is not None:
                    self._tool_errors[span.span_id] = (error, state)
        elif kind != LLM:
            found = dispatch_id(span)
            if found is not None:
                self._dispatched[span.span_id] = found

    def is_leg(self, span: Span) -> bool:
        """Whether tool span ``span`` records its parent tool span's call a second time (``tool_legs``)."""
        pid = span.parent_span_id
        parent = None if pid is None else self._tools.get(pid)
        own = self._tools.get(span.span_id)
        return parent is not None and own is not None and _same_call(own, parent)

    def leg_state(self, span: Span) -> bool | None:
        """Whether tool span ``span`` records a call another tool span above it makes (``is_leg``, or a
        transport record, ``is_transport_record``: an MCP library's, under a tool span of the same tool, as
        ``TraceIndex`` reads it): ``None`` while such a record's line of parents is cut by a span not seen
        yet (it may be a leg or the call)."""
        if self.is_leg(span):
            return True
        if not is_transport_record(span):
            return False
        name = tool_name(span)
        pid = span.parent_span_id
        for _ in range(len(self._parents) + 1):
            if pid is None:
                return False
            tool = self._tools.get(pid)
            if tool is not None:
                return tool.name == name
            entry = self._parents.get(pid)
            if entry is None:
                return None
            pid = entry[0]
        return False

    def leg_error(self, span: Span) -> tuple[str, str] | None:
        """The error and state of a nested record of ``span``'s call that failed, if one was seen."""
        own = self._tools.get(span.span_id)
        for child in self._tool_children.get(span.span_id, ()):
            entry = self._tools.get(child)
            if (
                own is not None
                and entry is not None
                and _same_call(entry, own)
                and child in self._tool_errors
            ):
                return self._tool_errors[child]
        return None

    def dispatched(self, span: Span) -> str | None:
        """The model's call id recorded by the span that dispatched ``span``, if it was seen."""
        pid = span.parent_span_id
        return None if pid is None else self._dispatched.get(pid)

    def add_model_call(self, span: Span) -> None:
        """Index the requests of the model call ``span`` (an LLM span), and those of the model call before
        it (under the same agent) that only its input holds (``earlier_requests``: a tracer that recorded
        that call's input but not its output)."""
        found = requested_calls(span)
        for order, req in enumerate(found):
            self._requests.append(_Request(span.span_id, span.start_ns, order, req))
            self._asked_ids[req.id] = None
        earlier = [r for r in earlier_requests(span) if r.id not in self._asked_ids]
        before = self._model_call_before(span) if earlier else None
        if before is not None:
            for order, req in enumerate(earlier):
                self._requests.append(_Request(before[0], before[1], order, req))
                self._asked_ids[req.id] = None
        self._model_calls.append((span.span_id, span.start_ns))
        if not found and asks_unrecorded_calls(span):
            self._unrecorded.append((span.span_id, span.start_ns))
            if self._max_requests is not None and len(self._unrecorded) > self._max_requests:
                del self._unrecorded[0]
        if self._max_requests is not None and len(self._requests) > self._max_requests:
            del self._requests[: len(self._requests) - self._max_requests]
        if self._max_requests is not None:
            while len(self._asked_ids) > self._max_requests:
                self._asked_ids.popitem(last=False)
            del self._model_calls[: max(0, len(self._model_calls) - self._max_requests)]
        for cid, response in sent_responses(span).items():
            self._responses[cid] = response
            self._responses.move_to_end(cid)
        while self._max_requests is not None and len(self._responses) > self._max_requests:
            self._responses.popitem(last=False)

    def _model_call_before(self, span: Span) -> tuple[str, int] | None:
        """The latest model call indexed that started before ``span``, under the same agent run."""
        agent = self._agents(span.span_id)[0]
        earlier = [m for m in self._model_calls if m[1] < span.start_ns and self._agents(m[0])[0] == agent]
        return max(earlier, key=lambda m: m[1], default=None)

    def answered(self, recorded: ToolCallRecord, call: ToolCallRecord) -> ToolCallRecord:
        """``call`` (``recorded`` linked), when its span recorded neither arguments nor an outcome (Google
        ADK for JavaScript records a tool's call only when the tool returns), with the response sent back
        to the model for its call id: ``{"error": ...}`` a failure, anything else its result."""
        response = self._responses.get(call.call_id)
        if (
            response is None
            or recorded.model_input is not None
            or recorded.output is not None
            or recorded.error is not None
            or recorded.state != sc.STATE_COMPLETED
        ):
            return call
        if isinstance(response, Mapping) and response.keys() == {"error"}:
            error = str(response["error"])
            return dataclasses.replace(
                call, output=dict(response), error=error, is_error=True, state=sc.STATE_FAILED
            )
        return dataclasses.replace(call, output=normal_result(response))

    def _agents(self, span_id: str) -> list[str | None]:
        """The agent spans above ``span_id``, nearest first, ending with ``None`` (the trace itself)."""
        out: list[str | None] = []
        entry = self._parents.get(span_id)
        seen = 0
        while entry is not None and entry[0] is not None and seen <= len(self._parents):
            pid = entry[0]
            entry = self._parents.get(pid)
            if entry is not None and entry[1]:
                out.append(pid)
            seen += 1
        out.append(None)
        return out

    def link(self, call: ToolCallRecord, dispatched: str | None = None) -> ToolCallRecord:
        """``call`` with its arguments and result unwrapped, linked to the request it answers (used up).

        ``dispatched``: the model's call id recorded by the span that dispatched the tool, if known.
        """
        return self.linked(call, dispatched)[0]

    def linked(
        self, call: ToolCallRecord, dispatched: str | None = None, *, consume: bool = True
    ) -> tuple[ToolCallRecord, _Request | None]:
        """``link``, and the request it used up (``None`` when none matched); ``consume=False``: matched
        but left for a later call."""
        args, known_id, output = _call_facts(call, dispatched)
        span = call.span
        if not self._requests and not self._unrecorded:  # a trace with no model call's requests
            return self.answered(call, _applied(call, None, args, known_id, output)), None
        agent = self._agents(span.span_id)[0]
        scopes: dict[str, list[str | None]] = {}
        candidates = []
        for r in self._requests:
            if r.start_ns > span.start_ns:
                continue
            scope = scopes.get(r.llm)
            if scope is None:
                scope = scopes[r.llm] = self._agents(r.llm)
            if agent in scope:
                candidates.append(r)
        candidates.sort(key=lambda r: (-r.start_ns, r.order))
        match = _match(candidates, call.name, args, known_id)
        if match is None:
            # Never used up: a model call asks for any number of calls it does not record.
            unrecorded = self._unrecorded_request(span, agent)
            return self.answered(call, _applied(call, unrecorded, args, known_id, output)), None
        if consume:
            self._requests.remove(match)
        return self.answered(call, _applied(call, match, args, known_id, output)), match

    def _unrecorded_request(self, span: Span, agent: str | None) -> _Request | None:
        """The latest model call started before ``span``, under ``agent``, whose requests are unrecorded, as
        a request that fills in nothing but the link."""
        found = None
        for llm, start_ns in self._unrecorded:
            later = found is None or start_ns >= found[1]
            if start_ns <= span.start_ns and later and agent in self._agents(llm):
                found = (llm, start_ns)
        return None if found is None else _Request(found[0], found[1], 0, Requested(None, "", None))


def _call_facts(call: ToolCallRecord, dispatched: str | None) -> tuple[Any, str | None, Any]:
    """The arguments the model asked ``call`` with, unwrapped, the model's id for it if known, and its
    result unwrapped (its output read once for both: a ToolMessage holds the result and the id)."""
    output, answered_id = unwrapped_result(call.output)
    return normal_arguments(call.model_input), _own_id(call) or answered_id or dispatched, output


def _applied(
    call: ToolCallRecord, match: _Request | None, args: Any, known_id: str | None, output: Any
) -> ToolCallRecord:
    """``call`` unwrapped (``args``, ``known_id``, ``output``: its ``_call_facts``), with what the request
    ``match`` fills in."""
    changes: dict[str, Any] = {"output": output}
    if match is not None:
        req = match.request
        changes["requested_by"] = match.llm
        if _lossy(args) and req.arguments is not None:
            args = req.arguments
        if known_id is None and req.id is not None:
            known_id = req.id
    if known_id is not None:
        changes["call_id"] = known_id
    # One copy of the record (``with_model_input``'s change made here): a trace's every call is linked.
    if call.edit is None:
        changes["input"] = args
    else:
        changes["edit"] = dataclasses.replace(call.edit, model_input=args)
    return quick_replace(call, **changes)


@dataclasses.dataclass(frozen=True, slots=True)
class _ToolSeen:
    parent: str | None
    name: str
    scope: str
    own_id: str | None
    event_record: bool


def _seen(span: Span) -> _ToolSeen:
    call_id = tool_call_id(span)
    own = None if call_id == ids.synthetic_call_id(span.span_id) else call_id
    return _ToolSeen(span.parent_span_id, tool_name(span), span.scope, own, is_event_record(span))


def _same_call(inner: _ToolSeen, outer: _ToolSeen) -> bool:
    # Another instrumentation's record of the same call: same tool, another scope, no other id. (A tool
    # that calls itself is traced by one instrumentation: both spans have its scope.) Or the record of an
    # event of the call (BeeAI's ``error`` event inside its tool span).
    return inner.event_record or (
        inner.name == outer.name
        and inner.scope != outer.scope
        and (inner.own_id is None or outer.own_id is None or inner.own_id == outer.own_id)
    )


def tool_legs(spans: Sequence[Span], kinds: Sequence[str], parent: Sequence[int | None]) -> dict[int, int]:
    """``{inner: outer}``: a tool span right under a tool span of the same tool, written by another
    instrumentation (another scope), with no other call id, is that call recorded a second time
    (AutoGen's own ``execute_tool`` span inside OpenInference's span of the same call): one call. So is a
    record of an event of the call (BeeAI's ``error`` event span inside its tool span)."""
    out = {}
    for i, kind in enumerate(kinds):
        p = parent[i]
        if (
            kind == TOOL
            and p is not None
            and kinds[p] == TOOL
            and _same_call(_seen(spans[i]), _seen(spans[p]))
        ):
            out[i] = p
    return out


def _with_leg_error(call: ToolCallRecord, leg: tuple[str, str] | None) -> ToolCallRecord:
    # The outer record of a call that failed inside (its own record shows no failure: AutoGen hands the
    # error back to the model as the result, and OpenInference records that result).
    if leg is None or call.error is not None:
        return call
    return dataclasses.replace(call, error=leg[0], state=leg[1], is_error=True)


def link_tool_calls(
    spans: Sequence[Span],
    kinds: Sequence[str],
    parent: Sequence[int | None],
    legs: Mapping[int, int] | None = None,
    read: Mapping[int, ToolCallRecord] | None = None,
) -> dict[int, ToolCallRecord]:
    """The tool call of every tool span of one trace (by index), linked to the model call that asked.

    ``legs``: ``{inner: outer}`` of calls recorded twice (``tool_legs``; the inner ones are no tool in
    ``kinds``): a failure the inner record shows is the outer call's. ``read``: the calls as recorded
    (``tool_call`` of each tool span, by index) when the caller read them already.
    """
    index = RequestIndex()
    for i, span in enumerate(spans):
        index.see(span, kinds[i])
    for i in sorted((i for i, k in enumerate(kinds) if k == LLM), key=lambda i: (spans[i].start_ns, i)):
        index.add_model_call(spans[i])
    errors: dict[int, tuple[str, str]] = {}
    for inner, outer in (legs or {}).items():
        state = tool_state(spans[inner])
        error = tool_error(spans[inner], state)
        if error is not None:
            errors.setdefault(outer, (error, state))
    out: dict[int, ToolCallRecord] = {}
    dispatched: dict[int, str | None] = {}  # by parent: the calls of one agent share theirs
    for i in sorted((i for i, k in enumerate(kinds) if k == TOOL), key=lambda i: (spans[i].start_ns, i)):
        p = parent[i]
        if p is not None and p not in dispatched:
            dispatched[p] = dispatch_id(spans[p])
        recorded = read[i] if read is not None else tool_call(spans[i])
        call = index.link(recorded, None if p is None else dispatched[p])
        out[i] = _with_leg_error(call, errors.get(i))
    return out


class StreamLinker:
    """Links the tool calls of a stream of spans as they come, in bounded memory.

    ``note(span)`` indexes every span's parent link and a model call's requests; ``link(span)`` returns a
    tool span's call linked to the model call that asked for it (``None`` for any other span); ``feed``
    does both. A span linked again (an open record, then its completion) gets the same link, unless the
    open record's was provisional (it had neither the model's id nor its arguments: matched by name, it
    used up no request).
    An MCP library's record of a call whose parents are not all seen yet (it may be the transport leg of
    a tool span above it, or the call itself) is withheld: ``link`` gives ``None``, and ``released()``
    gives it later, linked, once the span above it is noted (never if it is a leg); ``flush_held()`` gives
    those still withheld when the stream ends.
    Traces are dropped, the least recently noted first, past ``max_traces`` traces or ``max_entries``
    indexed entries (parent links and requests) in all.
    """

    def __init__(
        self,
        max_traces: int | None = None,
        max_requests: int | None = None,
        max_parents: int | None = None,
        max_entries: int | None = None,
    ) -> None:
        self._traces: OrderedDict[str, tuple[RequestIndex, dict[str, _Request]]] = OrderedDict()
        self._max_traces = MAX_TRACES if max_traces is None else max_traces
        self._max_requests = MAX_REQUESTS if max_requests is None else max_requests
        self._max_parents = MAX_PARENTS if max_parents is None else max_parents
        self._max_entries = MAX_ENTRIES if max_entries is None else max_entries
        self._entries = 0
        # Records withheld (maybe an MCP call's transport leg), by (trace id, span id, ended).
        self._held: OrderedDict[tuple[str, str, bool], tuple[Span, str]] = OrderedDict()
        self._max_held = LOOKAHEAD
        self._overflow: list[tuple[Span, str]] = []
        # Ended calls linked to no request (a later model call may show it), and those linked again since.
        self._unmatched: OrderedDict[tuple[str, str], Span] = OrderedDict()
        self._corrected: list[tuple[Span, ToolCallRecord]] = []

    def __len__(self) -> int:
        return len(self._traces)

    @property
    def entries(self) -> int:
        """Parent links and requests indexed, over all the traces kept."""
        return self._entries

    def _new(self, trace_id: str) -> tuple[RequestIndex, dict[str, _Request]]:
        entry: tuple[RequestIndex, dict[str, _Request]] = (
            RequestIndex(self._max_requests, self._max_parents),
            {},
        )
        self._traces[trace_id] = entry
        return entry

    def note(self, span: Span, kind: str | None = None) -> None:
        """Index ``span``: its parent link, and a model call's requests."""
        kind = classify(span) if kind is None else kind
        entry = self._traces.get(span.trace_id)
        if entry is None:
            entry = self._new(span.trace_id)
        else:
            self._traces.move_to_end(span.trace_id)
        index = entry[0]
        before = index.size()
        index.see(span, kind)
        index.see_streamed(span, kind)
        if kind == LLM and span.end_ns is not None:
            index.add_model_call(span)
            if index.size() > before + 1:  # requests: maybe earlier calls' ids, known only now
                self._correct(span.trace_id, index, entry[1])
        self._entries += index.size() - before
        while len(self._traces) > 1 and (
            len(self._traces) > self._max_traces or self._entries > self._max_entries
        ):
            _, (dropped, _) = self._traces.popitem(last=False)
            self._entries -= dropped.size()

    def link(self, span: Span, kind: str | None = None) -> ToolCallRecord | None:
        """The tool call of ``span`` linked to the request it answers (``None`` if not a tool span)."""
        kind = classify(span) if kind is None else kind
        if kind != TOOL:
            return None
        # Linking does not count as use: a stream links spans it noted a while ago (its read-ahead).
        entry = self._traces.get(span.trace_id)
        index, linked = self._new(span.trace_id) if entry is None else entry
        state = index.leg_state(span)
        if state is None:
            # Maybe an MCP call's transport leg: withheld until the span above it is seen (``released``).
            self._held[(span.trace_id, span.span_id, span.end_ns is not None)] = (span, kind)
            if len(self._held) > self._max_held:
                self._overflow.append(self._held.popitem(last=False)[1])
            return None
        if state:
            return None
        return self._linked(span, index, linked)

    def _correct(self, trace_id: str, index: RequestIndex, linked: dict[str, _Request]) -> None:
        """Link again the ended calls of ``trace_id`` that matched no request (``corrected``)."""
        for key, span in list(self._unmatched.items()):
            if key[0] != trace_id:
                continue
            call, match = index.linked(tool_call(span), index.dispatched(span))
            if match is not None:
                del self._unmatched[key]
                self._entries -= 1
                linked[span.span_id] = match
                self._corrected.append((span, _with_leg_error(call, index.leg_error(span))))

    def corrected(self) -> list[tuple[Span, ToolCallRecord]]:
        """Ended calls linked without the model's request whose request a later model call showed (its input
        holds the model's earlier calls: ``earlier_requests``), linked again, once each: a live stream
        sends their act and observe again (the same ``execution_id``, now with the model's id)."""
        out, self._corrected = self._corrected, []
        return out

    def released(self) -> list[tuple[Span, ToolCallRecord]]:
        """The withheld records now known to be calls, linked (in the order they came); those now known to
        be legs are dropped. A record withheld past ``max_held`` others is released as a call."""
        out = []
        for key, (span, _kind) in list(self._held.items()):
            entry = self._traces.get(span.trace_id)
            state = None if entry is None else entry[0].leg_state(span)
            if state is not None:
                del self._held[key]
                if not state and entry is not None:
                    out.append((span, self._linked(span, *entry)))
        out.extend(self._release(self._overflow))
        self._overflow = []
        return out

    def flush_held(self) -> list[tuple[Span, ToolCallRecord]]:
        """Every record still withheld, as a call (the stream ended without the span above it: as the views
        read it, a record with no tool above it is the call)."""
        out = self._release(list(self._held.values()))
        self._held.clear()
        return out

    def _release(self, held: list[tuple[Span, str]]) -> list[tuple[Span, ToolCallRecord]]:
        out = []
        for span, _kind in held:
            entry = self._traces.get(span.trace_id)
            index, linked = self._new(span.trace_id) if entry is None else entry
            out.append((span, self._linked(span, index, linked)))
        return out

    def _linked(self, span: Span, index: RequestIndex, linked: dict[str, _Request]) -> ToolCallRecord:
        call = tool_call(span)
        done = linked.get(span.span_id)
        if done is not None:
            # Its open record was linked: the completion gets the same request, not another one.
            linked_again = index.answered(call, _applied(call, done, *_call_facts(call, None)))
            return _with_leg_error(linked_again, index.leg_error(span))
        dispatched = index.dispatched(span)
        # An open record with neither the model's id nor its arguments yet (set later by some frameworks)
        # could only be matched by name: it gets that link provisionally, its completion the real one.
        provisional = (
            span.end_ns is None
            and _own_id(call) is None
            and dispatched is None
            and _lossy(normal_arguments(call.model_input))
        )
        out, match = index.linked(call, dispatched, consume=not provisional)
        if match is None and span.end_ns is not None:
            self._unmatched[(span.trace_id, span.span_id)] = span
            if len(self._unmatched) > self._max_held:
                self._unmatched.popitem(last=False)
        if match is not None and not provisional:
            self._entries -= 1  # the request is used up
            linked[span.span_id] = match
            if len(linked) > self._max_parents:
                linked.pop(next(iter(linked)))
        return _with_leg_error(out, index.leg_error(span))

    def feed(self, span: Span, kind: str | None = None) -> ToolCallRecord | None:
        """``note`` then ``link``: for spans that come in time order (a live processor)."""
        kind = classify(span) if kind is None else kind
        self.note(span, kind)
        return self.link(span, kind)


def link_stream(
    spans: Iterable[Span], linker: StreamLinker | None = None, lookahead: int | None = None
) -> Iterator[tuple[Span, ToolCallRecord | None]]:
    """Every span of ``spans`` in input order with its linked tool call (``None`` for other spans).

    A file's records are not in time order: one export request groups its spans by instrumentation
    scope, so a tool span may come before the model call that asked for it. Each span is indexed as it
    is read and linked ``lookahead`` spans later (or at the end), so memory stays bounded. A record that
    may be an MCP call's transport leg (``RequestIndex.leg_state``) comes once the span above it is read
    (dropped if it is a leg), or at the end as a call.
    """
    linker = StreamLinker() if linker is None else linker
    lookahead = LOOKAHEAD if lookahead is None else lookahead
    pending: deque[tuple[Span, str]] = deque()
    for span in spans:
        kind = classify(span)
        linker.note(span, kind)
        pending.append((span, kind))
        if len(pending) > lookahead:
            first, first_kind = pending.popleft()
            yield first, linker.link(first, first_kind)
        yield from linker.released()
    while pending:
        first, first_kind = pending.popleft()
        yield first, linker.link(first, first_kind)
        yield from linker.released()
    yield from linker.flush_held()
