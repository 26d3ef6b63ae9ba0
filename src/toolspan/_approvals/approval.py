"""What an approver is given and what it answers: the vocabulary of approvals, shared by the decision chain
(``asking``), the approvers toolspan ships (``book``, ``server``) and ``run_tool_calls``.

An approver is called with the ``ToolCall`` it decides and answers ``True`` (allow) or ``False`` (deny), or an
``Approval`` to say more: the reason (``note``), who decided (``by``), the arguments to run the call with
instead of the model's (``arguments``). Anything else denies the call, with the reason."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from toolspan._util.words import Decision

__all__ = ["DEFAULT_DENY_NOTE", "Answer", "Api", "Approval", "Approver", "Decision", "ToolCall"]

Api: TypeAlias = Literal["openai", "openai_responses", "anthropic", "gemini"]
"""The model API whose shapes a tool call came in (and its result goes back in)."""

DEFAULT_DENY_NOTE = "denied by the approver"


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a model, parsed: what ``approve`` is given. ``id`` is ``""`` for a Gemini
    function call without an id (the Gemini API leaves it out unless the model gives one)."""

    id: str
    name: str
    arguments: dict[str, Any]
    api: Api
    raw: Any = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class Approval:
    """An approver's full answer: ``decision`` (``"allow"`` or ``"deny"``), a ``note`` (the reason), ``by``
    (who or what decided: a person's id, ``"policy"``, ...) and, to run the tool with arguments other than the
    model's, ``arguments`` (the whole edited argument object)."""

    decision: Decision
    note: str | None = None
    by: str | None = None
    arguments: Mapping[str, Any] | None = None
    # When the wait began, if before this span (an approval resumed after a restart); else the span's own.
    required_ns: int | None = None


Answer: TypeAlias = "bool | Approval"
"""What an approver answers: ``True`` allows, ``False`` denies, an ``Approval`` says more."""

Approver: TypeAlias = "Callable[[ToolCall], Answer | Awaitable[Answer]]"
"""``approve=`` of ``run_tool_calls``: called with each call before it runs (sync or async)."""
