"""The decision words, in one place: what an approver, a person in the inbox or ``POST
/api/control/decisions`` decides, what ``toolspan.permission.decision`` records, what the views and their
JSON Schemas carry. Every module takes them from here (the schemas are checked against them by the tests).

A word toolspan does not know is a ``DecisionError`` naming where it was given, never read as one of the
words: what must fail closed (an approver that answers garbage) denies the call *because of* that error, with
the error as the reason. The trace and tool states are ``semconv``'s (``TOOL_STATES``, ``TRACE_STATES``).
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, get_args

from toolspan.errors import DecisionError

__all__ = ["ALLOW", "DECISIONS", "DENY", "Decision", "choices", "parse_decision"]

Decision: TypeAlias = Literal["allow", "deny"]
"""A decision, as spans record it (``toolspan.permission.decision``) and ``toolspan serve`` takes it."""

ALLOW: Final = "allow"
DENY: Final = "deny"
DECISIONS: Final[tuple[Decision, ...]] = get_args(Decision)

# ``True``/``False`` stand for these where a Python API takes a bool too.
_BOOLS: Final[dict[bool, Decision]] = {True: ALLOW, False: DENY}


def _brief(value: object) -> str:
    try:
        text = repr(value)
    except Exception:  # a value whose repr fails is still named, by its type
        text = f"a {type(value).__name__}"
    return text if len(text) <= 80 else text[:79] + "\u2026"


def choices(*, bools: bool = False) -> str:
    """The words as a message lists them: ``'allow' or 'deny'`` (``'allow', 'deny', True or False``)."""
    items = [repr(word) for word in DECISIONS] + (["True", "False"] if bools else [])
    return ", ".join(items[:-1]) + " or " + items[-1]


def parse_decision(
    value: object, field: str = "decision", *, bools: bool = False, shown: str = ""
) -> Decision:
    """``value`` as a decision word: the word itself (an exact ``str``, not a subclass claiming to be one) or,
    with ``bools``, ``True`` (allow) or ``False`` (deny). Anything else is a ``DecisionError`` naming
    ``field`` (``shown``: how the message shows the value, default its ``repr``)."""
    if type(value) is str:
        for word in DECISIONS:
            if value == word:
                return word
    elif bools and type(value) is bool:
        return _BOOLS[value]
    shown = shown or _brief(value)
    raise DecisionError(f"{field} must be {choices(bools=bools)}, got {shown}", field=field, value=value)
