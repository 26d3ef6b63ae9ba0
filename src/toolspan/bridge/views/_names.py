"""The one name of a run, shown wherever the run is: the server's trace list and inbox, the trace page's
title, the demo's printout.

``run_name(spans)`` of the spans known of one trace (all of them, or only its roots and, when it has none
yet, its first span: the trace list reads no more):

1. what the user asked: the recorded input text of the first root (by start, then span id) that has one,
   whitespace collapsed, cut at 200 characters;
2. else the first root's own name: an agent's or a plan's name, a tool's name, else the span's name;
3. else (no root has arrived: a live run of which only a waiting tool's record is here) the agent that
   tool's approval request names, else the first span's name as in 2;
4. else ``""`` (no span).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Final

from toolspan import semconv as sc
from toolspan.bridge.facts import AGENT, PLAN, TOOL, agent_name, classify, plan_name, tool_name
from toolspan.bridge.internal import agent_input_text
from toolspan.bridge.model import Span

__all__ = ["NAME_CHARS", "request_text", "run_name"]

_logger = logging.getLogger(__name__)
NAME_CHARS: Final = 200


def request_text(span: Span) -> str | None:
    """What the user asked, as ``span`` recorded it (one line, at most ``NAME_CHARS``), or ``None``."""
    try:
        text = agent_input_text(span)
    except Exception:  # a hostile attribute must not cost the run its name
        _logger.debug("toolspan: no input text for span %s", span.span_id, exc_info=True)
        return None
    if not text or not text.strip():
        return None
    text = " ".join(text.split())
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 1] + "\u2026"


def _own_name(span: Span) -> str:
    kind = classify(span)
    if kind == AGENT:
        return agent_name(span)
    if kind == PLAN:
        return plan_name(span)
    if kind == TOOL:
        return tool_name(span)
    return span.name


def _approval_agent(span: Span) -> str | None:
    for event in span.events:
        if event.name == sc.PERMISSION_REQUIRED_EVENT:
            agent = event.attributes.get(sc.GEN_AI_AGENT_NAME)
            if isinstance(agent, str) and agent:
                return agent
    return None


def run_name(spans: Iterable[Span]) -> str:
    """The run's name (see the module doc)."""
    ordered = sorted(spans, key=lambda s: (s.start_ns, s.span_id))
    roots = [s for s in ordered if s.parent_span_id is None]
    for root in roots:
        text = request_text(root)
        if text is not None:
            return text
    if roots:
        return _own_name(roots[0])
    if not ordered:
        return ""
    first = ordered[0]
    return _approval_agent(first) or _own_name(first)
