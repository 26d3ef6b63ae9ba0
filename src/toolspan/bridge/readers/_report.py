"""Read errors, issues and the per-read report shared by every reader."""

from __future__ import annotations

from dataclasses import dataclass, field

from toolspan.errors import BridgeReadError, ReadIssue

__all__ = ["BridgeReadError", "Ctx", "ReadIssue", "ReadReport", "join"]


@dataclass(slots=True)
class ReadReport:
    """What a read produced: spans read, records skipped (lenient mode), issues, partial traces."""

    spans_read: int = 0
    records_skipped: int = 0
    issues: list[ReadIssue] = field(default_factory=list)
    # Human-readable notes on traces a backend returned incomplete (Tempo ``status: "PARTIAL"``).
    partial_traces: list[str] = field(default_factory=list)
    sources_read: int = 0

    def add(self, issue: ReadIssue) -> None:
        self.issues.append(issue)
        self.records_skipped += issue.skipped


class Ctx:
    """Where the reader is (source, line) and what to do with bad records (raise or record)."""

    __slots__ = ("lenient", "line", "report", "source")

    def __init__(self, source: str, lenient: bool, report: ReadReport, line: int | None = None) -> None:
        self.source = source
        self.lenient = lenient
        self.report = report
        self.line = line

    @property
    def origin(self) -> str:
        return self.source if self.line is None else f"{self.source}:{self.line}"

    def fail(self, path: str, message: str, skipped: int = 1) -> None:
        """Raise (strict) or record (lenient) a bad record at JSON ``path``."""
        issue = ReadIssue(self.source, self.line, path, message, skipped)
        if not self.lenient:
            raise BridgeReadError(str(issue), issue)
        self.report.add(issue)

    def warn(self, path: str, message: str, skipped: int = 0) -> None:
        """Record an issue in either mode (never raises)."""
        self.report.add(ReadIssue(self.source, self.line, path, message, skipped))


def join(prefix: str, name: str) -> str:
    """Join JSON path parts: ``join("a[0]", "b") == "a[0].b"``, ``join("a", "[1]") == "a[1]"``."""
    if not prefix:
        return name
    if not name:
        return prefix
    return prefix + name if name.startswith("[") else f"{prefix}.{name}"
