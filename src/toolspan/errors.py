"""Every exception of toolspan's public API, in one module, each a ``ToolspanError`` (the tool-call ones are
also importable from ``toolspan``; the bridge's, the policy's and the backends' from their packages).

- ``ToolspanError``: the base of every exception toolspan raises (``except toolspan.errors.ToolspanError``);
  each keeps the builtin base its meaning has (``except ValueError`` still catches ``PolicyError``).
- ``ToolDenied``: raised to refuse a tool call (by a policy, an approver, or the tool itself): its span
  ends ``DENIED`` and ``run_tool_calls`` answers the model ``"PermissionDenied: <note>"``.
- ``ToolCancelled``: a running tool call cancelled on request (``POST /api/control/cancels`` of
  ``toolspan serve``, delivered by ``toolspan.ServerApprover``): raised by ``toolspan.check_cancelled()`` in
  a sync tool, at the next yield of a generator tool, and in place of an async tool's cancelled task; its
  span ends ``CANCELLED`` with who asked; ``run_tool_calls`` answers ``"ToolCancelled: <note>"``.
- ``ToolNotFoundError``, ``InvalidArgumentsError``, ``UnsupportedToolCallError``: a model's tool call that
  ``run_tool_calls`` cannot run (each becomes an error result for the model, never raised to the caller).
- ``PolicyError``: a policy that cannot be used (the message names the file, line and field).
- ``DecisionError``: a decision word toolspan does not know (``"allow"`` and ``"deny"`` are the words); its
  ``field`` names where it was given.
- ``ReplayError`` (and ``ReplayDivergence``, ``ReplaySealed``): a recording that cannot be replayed, or a
  replay that cannot go on; ``ReplayedToolError``: a recorded failure, raised again by a replay.
- ``PatternError``: a policy pattern that cannot be used (``toolspan.policy.compile_pattern``).
- ``BridgeReadError``: input the bridge cannot read (``toolspan.bridge.readers``); its ``issue``, a
  ``ReadIssue``, names the source, line and field.
- ``BackendError``: Jaeger or Tempo could not be read (``toolspan.backends``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BackendError",
    "BridgeReadError",
    "DecisionError",
    "InvalidArgumentsError",
    "PatternError",
    "PolicyError",
    "ReadIssue",
    "ReplayDivergence",
    "ReplayError",
    "ReplaySealed",
    "ReplayedToolError",
    "ToolCancelled",
    "ToolDenied",
    "ToolNotFoundError",
    "ToolspanError",
    "UnsupportedToolCallError",
]


class ToolspanError(Exception):
    """The base of every exception toolspan raises."""


class ToolDenied(ToolspanError):
    """Raise in a tool (or an approval flow) to refuse the call: the span ends in state DENIED.

    ``note`` says why; it becomes the message of the exception.
    """

    def __init__(self, note: str | None = None) -> None:
        super().__init__(*(() if note is None else (note,)))
        self.note = note


# Recorded as error.type "toolspan.ToolDenied" (the name the public API gives it).
ToolDenied.__module__ = "toolspan"


class ToolCancelled(ToolspanError):
    """A running tool call was cancelled on request: ``by`` who asked, ``note`` why. The span ends in state
    CANCELLED (``toolspan.tool.cancelled_by`` = ``by``)."""

    def __init__(self, note: str | None = None, *, by: str | None = None) -> None:
        text = note or (f"cancelled by {by}" if by else "cancelled")
        super().__init__(text)
        self.note = note
        self.by = by


ToolCancelled.__module__ = "toolspan"


class ToolNotFoundError(ToolspanError, LookupError):
    """The model called a tool that is not in the registry."""


class InvalidArgumentsError(ToolspanError, ValueError):
    """The model's arguments are not a JSON object."""


class UnsupportedToolCallError(ToolspanError, TypeError):
    """A kind of tool call that toolspan cannot run (an OpenAI custom tool call)."""


class PolicyError(ToolspanError, ValueError):
    """A policy file that cannot be used; the message names the file and the field."""


class DecisionError(ToolspanError, ValueError):
    """A decision that is no decision word: ``field`` names where it was given, ``value`` is what was given
    (``toolspan._util.words`` holds the words). A call it was meant to decide is denied, with this reason."""

    def __init__(self, message: str, *, field: str, value: object) -> None:
        super().__init__(message)
        self.field = field
        self.value = value


class ReplayError(ToolspanError):
    """A recording that cannot be replayed, or a replay that cannot go on."""


class ReplayDivergence(ReplayError):
    """The run asked for a tool call the recording does not hold."""


class ReplaySealed(ReplayError):
    """The matching recorded call never ended; re-running it needs ``approve_sealed``."""


class ReplayedToolError(ToolspanError):
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


class PatternError(ToolspanError, ValueError):
    """A pattern that cannot be used; the message says why, in one line."""


@dataclass(frozen=True, slots=True)
class ReadIssue:
    """One problem found in the input: a skipped record, or a warning (``skipped == 0``)."""

    source: str
    line: int | None
    field: str
    message: str
    skipped: int = 1

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class BridgeReadError(ToolspanError, ValueError):
    """Input the bridge cannot read; the message names the source, line (or JSON path) and field."""

    def __init__(self, message: str, issue: ReadIssue | None = None) -> None:
        super().__init__(message)
        self.issue = issue


class BackendError(ToolspanError):
    """A backend could not be reached, answered with an error, or sent what the bridge cannot read."""
