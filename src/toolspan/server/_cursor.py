"""A position in the server's event log: ``<commit ns>-<trace id>-<span id>-<phase>``."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Cursor"]


@dataclass(frozen=True, slots=True, order=True)
class Cursor:
    """A position in the event log: everything strictly after it is still to be sent."""

    ns: int
    trace_id: str = ""
    span_id: str = ""
    phase: int = -1

    def __str__(self) -> str:
        return f"{self.ns}-{self.trace_id}-{self.span_id}-{self.phase}"

    @classmethod
    def parse(cls, text: str) -> Cursor | None:
        """The cursor an ``id:`` line carried, or ``None`` for text that is not one."""
        parts = text.strip().split("-")
        if len(parts) != 4 or not parts[0].isdigit() or parts[3] not in ("0", "1"):
            return None
        if len(parts[1]) != 32 or len(parts[2]) != 16:
            return None
        return cls(int(parts[0]), parts[1], parts[2], int(parts[3]))
