"""Policy patterns on a linear-time engine: RE2 (``google-re2``, in ``toolspan[policy]``).

A tool's arguments are hostile input: a backtracking engine (Python's ``re``) can be made to spend seconds,
or years, on one 30-character argument, holding the GIL and the guard's lock while every thread of the
application waits. RE2 matches in time linear in the text, whatever the pattern, so a pattern rule on a
megabyte argument costs milliseconds. Patterns RE2 does not support (backreferences, lookarounds) are refused
when the policy is read, never tried on a call. Without ``google-re2`` a policy with a pattern is refused too:
a policy never falls back to an engine it cannot bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from toolspan.errors import PatternError

__all__ = ["MAX_PATTERN_CHARS", "Pattern", "PatternError", "compile_pattern"]

MAX_PATTERN_CHARS: Final = 4096


@dataclass(frozen=True, slots=True)
class Pattern:
    """One compiled pattern; ``pattern`` is its source text."""

    pattern: str
    _compiled: Any

    def search(self, text: str) -> bool:
        """Whether the pattern occurs in ``text`` (linear time in ``len(text)``). The pattern runs on the
        UTF-8 bytes (RE2's own encoding: no offsets are mapped back to characters); a lone surrogate, which
        UTF-8 cannot hold, is read as U+FFFD."""
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            data = text.encode("utf-8", "replace")
        return self._compiled.search(data) is not None


def _engine() -> Any:
    try:
        import re2
    except ImportError:
        raise PatternError(
            "patterns need the linear-time RE2 engine: google-re2 (the policy extra; in a checkout of"
            " toolspan: pip install '.[policy]')"
        ) from None
    return re2


def compile_pattern(source: str) -> Pattern:
    """``source`` compiled with RE2 (Python's syntax for what both support; ``(?i)`` and friends work)."""
    if len(source) > MAX_PATTERN_CHARS:
        raise PatternError(f"a pattern of {len(source)} characters; at most {MAX_PATTERN_CHARS}")
    re2 = _engine()
    options = re2.Options()
    options.log_errors = False
    try:
        compiled = re2.compile(source.encode("utf-8"), options)  # UTF-8 mode: a character is a character
    except Exception as e:  # re2.error, and TypeError/ValueError for text RE2 cannot take
        detail = e.args[0] if e.args else ""
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        reason = " ".join(str(detail).split()) or type(e).__name__
        raise PatternError(
            f"not a valid RE2 regular expression (no backreferences or lookarounds): {reason}"
        ) from None
    return Pattern(source, compiled)
