"""Every stored table, declared once: its row type (its columns, in order, each with its stored type: see
``_rows.columns``), its key, and the columns no row carries. From a declaration come the column lists of
the statements (``names``, ``listed``), the conflict clause that replaces a row (``upsert``), the array type
PostgreSQL binds each column as in a bulk insert (``arrays``), the DDL of a column added later
(``added_steps``) and the rows themselves (the row type). The schema's migrations (``schema``) are the
history that built these tables: ``tests/server/store/test_tables.py`` checks both agree, on both engines.

``traces`` is a summary of each trace's ``spans``: its row (``TraceRow``) is declared here with how each
column is recomputed from them (``SUMMARY_OF_SPANS``); ``summaries`` keeps the same row up to date from the
new spans alone.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from toolspan.server._rows.columns import Added, AnyValue, Id, Int8, Kind
from toolspan.server._rows.control import CancelRow, DecisionRow, PollRow
from toolspan.server._rows.spans import Row

__all__ = [
    "CONTROL_CANCELS",
    "CONTROL_DECISIONS",
    "CONTROL_POLLS",
    "DO_NOTHING",
    "EVENTS",
    "LOGS",
    "META",
    "SPANS",
    "SUMMARY_OF_SPANS",
    "TABLES",
    "TRACES",
    "Column",
    "EventRow",
    "LogRow",
    "MetaRow",
    "Table",
    "TraceRow",
    "added_steps",
    "trace_row",
]

# The conflict clause of an ``INSERT`` that keeps the row already stored (both engines).
DO_NOTHING: Final = "ON CONFLICT DO NOTHING"

# A column's type in the schema's DDL (``dialect`` fills the words in), by the Python type or ``Kind`` of its
# field; and the array type PostgreSQL binds it as in a bulk insert (``unnest``).
_TYPES: Final = {str: "TEXT", int: "INTEGER", bool: "INTEGER"}
_WORDS: Final = {"id": "{id}", "int8": "{int8}", "data": "{data}", "any": "{any}"}
_ARRAYS: Final = {"INTEGER": "int[]", "{int8}": "bigint[]", "{data}": "bytea[]"}


@dataclasses.dataclass(frozen=True, slots=True)
class Column:
    """One column: its name, its type in the schema's words, whether it may be NULL, its default (``None``:
    none), the version that added it (``None``: it came with its table) and, for a column of one engine only,
    that engine."""

    name: str
    type: str
    nullable: bool = True
    default: str | None = None
    added: int | None = None
    engine: str | None = None

    @property
    def definition(self) -> str:
        """The column in a ``CREATE TABLE`` or ``ADD COLUMN``."""
        # ``{any}`` is SQLite's nothing or PostgreSQL's `` TEXT``: no space before it.
        text = self.name + (self.type if self.type == "{any}" else f" {self.type}")
        text += "" if self.nullable else " NOT NULL"
        return text if self.default is None else f"{text} DEFAULT {self.default}"

    @property
    def array(self) -> str:
        return _ARRAYS.get(self.type, "text[]")


def _column(name: str, hint: Any, default: Any) -> Column:
    """The column of a row type's field ``name`` of type ``hint`` (``default``: ``MISSING`` when none)."""
    nullable = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint):
        nullable = True
        (hint,) = [a for a in typing.get_args(hint) if a is not type(None)]
    marks: tuple[Any, ...] = ()
    if typing.get_origin(hint) is typing.Annotated:
        marks = hint.__metadata__
        hint = typing.get_args(hint)[0]
    kinds = [m.word for m in marks if isinstance(m, Kind)]
    added = [m.version for m in marks if isinstance(m, Added)]
    sql_type = _WORDS[kinds[0]] if kinds else _TYPES[hint]
    shown = None if default is dataclasses.MISSING else repr(default)
    return Column(name, sql_type, nullable, shown, added[0] if added else None)


def _row_columns(row: type[Any]) -> tuple[Column, ...]:
    hints = typing.get_type_hints(row, include_extras=True)
    if dataclasses.is_dataclass(row):
        defaults = {f.name: f.default for f in dataclasses.fields(row)}
    else:
        defaults = dict(row._field_defaults)
    return tuple(_column(name, hint, defaults.get(name, dataclasses.MISSING)) for name, hint in hints.items())


class Table:
    """A stored table: ``name``, its row type (``row``: its columns, in order), its ``key`` (the conflict
    target of its inserts), its part of the schema (``part``) and the columns no row carries (``extra``: the
    database fills them, or an earlier release did)."""

    __slots__ = ("arrays", "columns", "extra", "key", "listed", "name", "names", "part", "row", "upsert")

    def __init__(
        self, name: str, row: type[Any], key: Sequence[str], part: str, extra: Sequence[Column] = ()
    ) -> None:
        self.name = name
        self.row = row
        self.key = tuple(key)
        self.part = part
        self.extra = tuple(extra)
        # The columns rows are written and read as, in order; ``names`` joined (a statement's column list).
        self.columns = _row_columns(row)
        self.names = tuple(c.name for c in self.columns)
        self.listed = ", ".join(self.names)
        self.arrays = tuple(c.array for c in self.columns)
        # The conflict clause of an ``INSERT`` that replaces the row of the same key (both engines).
        updates = ", ".join(f"{c} = excluded.{c}" for c in self.names if c not in self.key)
        self.upsert = f"ON CONFLICT ({', '.join(self.key)}) DO UPDATE SET {updates}"

    def stored(self, engine: str) -> tuple[Column, ...]:
        """Every column the table has on ``engine``, as the schema makes it."""
        extra = tuple(c for c in self.extra if c.engine in (None, engine))
        return self.columns + extra


# --- the store's own rows ------------------------------------------------------------------------------


class TraceRow(NamedTuple):
    """A row of ``traces``: a trace's summary, kept up to date as its spans are stored (``summaries``)."""

    trace_id: Id
    service: str | None
    conversation_id: str | None
    root_name: str | None
    root_ended: int  # 1 when the root span has ended
    start_ns: Int8
    end_ns: Int8 | None
    last_seen_ns: Int8
    spans: int
    tools: int
    errors: int
    open_tools: int


def trace_row(row: Sequence[Any]) -> TraceRow:
    """A ``traces`` row read in column order."""
    return TraceRow(*row)


# How each column of ``traces`` is recomputed from a trace's spans (``s``, grouped by trace; ``?``: the
# transaction's time): the root is the parentless span that starts first (then the smaller span id), and
# ``last_seen_ns`` moves to the time given, never back (a replica's clock behind another's never moves it).
SUMMARY_OF_SPANS: Final = {
    "trace_id": "s.trace_id",
    "service": "max(s.service)",
    "conversation_id": "max(s.conversation_id)",
    "root_name": "(SELECT r.name FROM spans r WHERE r.trace_id = s.trace_id AND r.parent IS NULL"
    "  ORDER BY r.start_ns, r.span_id LIMIT 1)",
    "root_ended": "coalesce((SELECT CASE WHEN r.end_ns IS NULL THEN 0 ELSE 1 END FROM spans r"
    "  WHERE r.trace_id = s.trace_id AND r.parent IS NULL ORDER BY r.start_ns, r.span_id LIMIT 1), 0)",
    "start_ns": "min(s.start_ns)",
    "end_ns": "max(s.end_ns)",
    "last_seen_ns": "{greatest}(?, coalesce((SELECT t.last_seen_ns + 1 FROM traces t"
    " WHERE t.trace_id = s.trace_id), 0))",
    "spans": "count(*)",
    "tools": "sum(s.is_tool)",
    "errors": "sum(s.is_error)",
    "open_tools": "sum(CASE WHEN s.is_tool = 1 AND s.end_ns IS NULL THEN 1 ELSE 0 END)",
}


class EventRow(NamedTuple):
    """A row of ``events``: an act or observe of a tool span, or both (``BOTH``), keyed by its cursor
    (``_rows.cursor``)."""

    ns: Int8
    trace_id: Id
    span_id: Id
    phase: int


class LogRow(NamedTuple):
    """A row of ``logs``: a span-tied log record, keyed by its digest (``logs``), stored as JSON text."""

    trace_id: Id
    span_id: Id
    digest: str
    ns: Int8
    data: str


class MetaRow(NamedTuple):
    """A row of ``meta``: one of the store's own values (the commit clock, the event log's horizon, ...)."""

    key: str
    value: AnyValue


# --- the tables ----------------------------------------------------------------------------------------

SPANS: Final = Table("spans", Row, ("trace_id", "span_id"), "core")
TRACES: Final = Table("traces", TraceRow, ("trace_id",), "core")
# The event log's conversation id (filled by 0.1.0) stays NULL: a conversation's events are its traces'.
EVENTS: Final = Table(
    "events", EventRow, ("ns", "trace_id", "span_id", "phase"), "core", (Column("conversation_id", "TEXT"),)
)
# Log records are read in arrival order: SQLite's rowid, PostgreSQL's ``seq``.
LOGS: Final = Table(
    "logs",
    LogRow,
    ("trace_id", "span_id", "digest"),
    "core",
    (Column("seq", "{int8}", nullable=False, engine="postgres"),),
)
META: Final = Table("meta", MetaRow, ("key",), "core")
CONTROL_DECISIONS: Final = Table("control_decisions", DecisionRow, ("trace_id", "span_id"), "control")
CONTROL_CANCELS: Final = Table("control_cancels", CancelRow, ("trace_id", "span_id"), "control")
CONTROL_POLLS: Final = Table("control_polls", PollRow, ("trace_id", "span_id"), "control")
TABLES: Final = (SPANS, TRACES, EVENTS, LOGS, META, CONTROL_DECISIONS, CONTROL_CANCELS, CONTROL_POLLS)


def added_steps(part: str, after: int) -> tuple[tuple[int, str], ...]:
    """The migrations of ``part`` past version ``after`` (its steps written by hand, history) that add the
    columns declared ``Added`` in them: ``(version, DDL)``, one ``ADD COLUMN`` per column."""
    steps: dict[int, list[str]] = {}
    for table in TABLES:
        for column in table.columns:
            if table.part == part and column.added is not None and column.added > after:
                steps.setdefault(column.added, []).append(
                    f"ALTER TABLE {table.name} ADD COLUMN {column.definition};"
                )
    return tuple((version, "\n".join(steps[version])) for version in sorted(steps))
