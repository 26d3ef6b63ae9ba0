"""Every exception of toolspan's public API, in one module (also importable from ``toolspan``).

- ``ToolDenied``: raised to refuse a tool call (by a policy, an approver, or the tool itself): its span
  ends ``DENIED`` and ``run_tool_calls`` answers the model ``"PermissionDenied: <note>"``.
- ``ToolCancelled``: a running tool call cancelled on request (``POST /api/control/cancels`` of
  ``toolspan serve``, delivered by ``toolspan.ServerApprover``): raised by ``toolspan.check_cancelled()`` in
  a sync tool, at the next yield of a generator tool, and in place of an async tool's cancelled task; its
  span ends ``CANCELLED`` with who asked; ``run_tool_calls`` answers ``"ToolCancelled: <note>"``.
- ``ToolNotFoundError``, ``InvalidArgumentsError``, ``UnsupportedToolCallError``: a model's tool call that
  ``run_tool_calls`` cannot run (each becomes an error result for the model, never raised to the caller).
- ``PolicyError``: a policy that cannot be used (the message names the file, line and field).
- ``ReplayError`` (and ``ReplayDivergence``, ``ReplaySealed``): a recording that cannot be replayed, or a
  replay that cannot go on; ``ReplayedToolError``: a recorded failure, raised again by a replay.

Reading errors of the bridge are ``toolspan.bridge.BridgeReadError``.
"""

from __future__ import annotations

__all__ = [
    "InvalidArgumentsError",
    "PolicyError",
    "ReplayDivergence",
    "ReplayError",
    "ReplaySealed",
    "ReplayedToolError",
    "ToolCancelled",
    "ToolDenied",
    "ToolNotFoundError",
    "UnsupportedToolCallError",
]


class ToolDenied(Exception):
    """Raise in a tool (or an approval flow) to refuse the call: the span ends in state DENIED.

    ``note`` says why; it becomes the message of the exception.
    """

    def __init__(self, note: str | None = None) -> None:
        super().__init__(*(() if note is None else (note,)))
        self.note = note


# Recorded as error.type "toolspan.ToolDenied" (the name the public API gives it).
ToolDenied.__module__ = "toolspan"


class ToolCancelled(Exception):
    """A running tool call was cancelled on request: ``by`` who asked, ``note`` why. The span ends in state
    CANCELLED (``toolspan.tool.cancelled_by`` = ``by``)."""

    def __init__(self, note: str | None = None, *, by: str | None = None) -> None:
        text = note or (f"cancelled by {by}" if by else "cancelled")
        super().__init__(text)
        self.note = note
        self.by = by


ToolCancelled.__module__ = "toolspan"


class ToolNotFoundError(LookupError):
    """The model called a tool that is not in the registry."""


class InvalidArgumentsError(ValueError):
    """The model's arguments are not a JSON object."""


class UnsupportedToolCallError(TypeError):
    """A kind of tool call that toolspan cannot run (an OpenAI custom tool call)."""


class PolicyError(ValueError):
    """A policy file that cannot be used; the message names the file and the field."""


class ReplayError(Exception):
    """A recording that cannot be replayed, or a replay that cannot go on."""


class ReplayDivergence(ReplayError):
    """The run asked for a tool call the recording does not hold."""


class ReplaySealed(ReplayError):
    """The matching recorded call never ended; re-running it needs ``approve_sealed``."""


class ReplayedToolError(Exception):
    """The recorded call failed: ``error_type`` and ``message`` are the recorded ones. A replay raises it as
    a subclass named after the recorded exception (deriving from the builtin exception of that name, when
    there is one), whose ``str()`` is the recorded message."""

    def __init__(self, error_type: str, message: str, execution_id: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.execution_id = execution_id

    def __str__(self) -> str:
        return self.message
