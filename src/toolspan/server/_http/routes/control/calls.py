"""What the control channel's reads and writes both say of a tool call: whether it waits for its decision,
since when (as far as the server can vouch for it), a stored decision or cancel request as the routes answer
it, and the ids and waits a request names."""

from __future__ import annotations

import json
import math
from typing import Any, Final

from starlette.requests import Request

from toolspan._util.ids import parse_trace_id
from toolspan.bridge.facts import approvals
from toolspan.bridge.internal import ACT_AWAITING_APPROVAL, act_status
from toolspan.bridge.model import Span
from toolspan.server._http.jsonio import Refused
from toolspan.server._rows.control import CancelRow, DecisionRow
from toolspan.server._store.control import ControlRows

__all__ = [
    "MAX_WAIT_S",
    "UNKNOWN_HINT",
    "cancel_body",
    "decision_body",
    "ms",
    "trace_param",
    "vouched_since",
    "wait_param",
    "waiting",
    "waiting_since",
]

MAX_WAIT_S: Final = 30.0
# How much earlier than the server first received a waiting span its own clock may say it began waiting
# (export delay, clock skew): a claimed wait older than that counts from the arrival minus this.
ARRIVAL_SLACK_NS: Final = 60 * 10**9
# Why a call may be unknown here: its application sends no pending records, so the server never saw it wait.
UNKNOWN_HINT: Final = (
    " (a call shows here while it waits or runs only when its application exports pending records:"
    " TOOLSPAN_PENDING_SPANS=true)"
)


def ms(ns: int | None) -> int | None:
    return None if ns is None else ns // 1_000_000


def decision_body(row: DecisionRow) -> dict[str, Any]:
    """A stored decision as the routes answer it."""
    return {
        "execution_id": row.execution_id,
        "trace_id": row.trace_id,
        "span_id": row.span_id,
        "call_id": row.call_id,
        "tool": row.tool,
        "decision": row.decision,
        "shown": row.shown,
        "note": row.note,
        "by": row.decided_by,
        "arguments": None if row.arguments is None else json.loads(row.arguments),
        "waiting_since": ms(row.waiting_since_ns),
        "waiting_since_ns": row.waiting_since_ns,
        "decided_at": ms(row.decided_ns),
    }


def cancel_body(row: CancelRow) -> dict[str, Any]:
    """A stored cancel request as the routes answer it."""
    return {
        "execution_id": row.execution_id,
        "trace_id": row.trace_id,
        "span_id": row.span_id,
        "call_id": row.call_id,
        "by": row.requested_by,
        "note": row.note,
        "requested_at": ms(row.requested_ns),
    }


def waiting(span: Span) -> bool:
    """Whether the tool span waits for its decision (not ended, its act asking for one)."""
    return span.end_ns is None and act_status(span) == ACT_AWAITING_APPROVAL


def _claimed_since(span: Span) -> int:
    """When the call says it began waiting: its first ``permission_required`` (else its start)."""
    marks = [m.time_ns for m in approvals(span) if m.decision is None]
    return min(marks) if marks else span.start_ns


def vouched_since(span: Span, received_ns: int | None) -> int:
    """When the call began waiting, as far as the server can vouch for it: the span's own first
    ``permission_required``, but never more than ``ARRIVAL_SLACK_NS`` before the server first received the
    span (``received_ns``; a forged record cannot claim a wait of decades)."""
    claimed = _claimed_since(span)
    if received_ns is None:
        return claimed
    return max(claimed, received_ns - ARRIVAL_SLACK_NS)


def waiting_since(rows: ControlRows, span: Span) -> int:
    """``vouched_since`` of one call, its arrival read from ``rows``."""
    return vouched_since(span, rows.received_ns(span.trace_id, span.span_id))


def trace_param(raw: str, what: str) -> str:
    """A trace id a request names (32 hex digits, any case), else ``Refused`` (400) naming ``what``."""
    text = parse_trace_id(raw.strip(), any_case=True)
    if text is None:
        raise Refused(400, f"{what} is not a trace id (32 hex digits): {raw[:80]!r}")
    return text


def wait_param(request: Request) -> float:
    """``?wait=`` in seconds (at most ``MAX_WAIT_S``), else ``Refused`` (400)."""
    raw = request.query_params.get("wait", "0")
    try:
        wait = float(raw) if raw.isascii() and len(raw) <= 32 else float("nan")
    except ValueError:
        raise Refused(400, f"wait must be a number of seconds, got {raw[:40]!r}") from None
    if not math.isfinite(wait) or wait < 0:
        raise Refused(400, f"wait must be a number of seconds >= 0, got {raw[:40]!r}")
    return min(wait, MAX_WAIT_S)
