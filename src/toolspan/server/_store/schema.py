"""The store's one schema, for SQLite and PostgreSQL alike, versioned and migrated when a server starts.

The schema is a list of *parts* (``SchemaPart``): this package's own (``CORE``) and any a later module
adds (a part is a name and its migrations, each a version and its DDL). The DDL is written once, for
both engines, with six words standing in for what differs (``{id}``, ``{int8}``, ``{data}``, ``{rowid_free}``,
``{any}``, ``{log_seq}``); ``dialect`` fills them in for an engine.

A table ``schema_versions`` holds the version each part is at. ``pending`` says which migrations a store
still needs; ``migrate`` applies them, in one transaction the engine's store opens at start under a lock
(SQLite: its write lock; PostgreSQL: a transaction-level advisory lock), so replicas starting against an
empty database at the same moment apply each migration once and all come up with one schema.

Another module's tables join as a part of their own, as the control channel's do (``CONTROL``), the
DDL in the words above (``{int8}`` for nanosecond times: PostgreSQL's ``INTEGER`` has 32 bits), its
statements run through ``StoreApi.transaction()``, whose connection takes the statements of ``dialect`` on
both engines.

The steps written here are history: each table is declared once (``sql.tables``), and the test of
``tests/server/store/test_tables.py`` checks the tables these steps build agree with the declarations. A
column added later is declared with the version that adds it (``Added``): that step is written from the
declaration (``ALTER TABLE ... ADD COLUMN``, ``sql.tables.added_steps``).

Version 1 of ``core`` is the schema of 0.1.0 (every statement ``IF NOT EXISTS``): a store written by an
earlier release is brought under version control without a change. Later versions change a store once
(``ALTER TABLE``): ``pending`` applies each version exactly once.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from toolspan.server._store.dialect import DIALECTS, POSTGRES, SQLITE, Connection
from toolspan.server._store.sql.tables import added_steps

__all__ = [
    "CONTROL",
    "CORE",
    "PARTS",
    "POSTGRES",
    "SQLITE",
    "VERSIONS_DDL",
    "SchemaPart",
    "ddl",
    "migrate",
    "pending",
    "statements",
]

_logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SchemaPart:
    """A named part of the schema and its migrations: ``(version, DDL)``, versions counting up from 1."""

    name: str
    migrations: tuple[tuple[int, str], ...]

    @property
    def version(self) -> int:
        return self.migrations[-1][0] if self.migrations else 0


_VERSION_PUT: Final = (
    "INSERT INTO schema_versions VALUES (?, ?) ON CONFLICT (part) DO UPDATE SET version = excluded.version"
)
VERSIONS_DDL: Final = (
    "CREATE TABLE IF NOT EXISTS schema_versions (part TEXT PRIMARY KEY, version INTEGER NOT NULL)"
)

_CORE_V1: Final = """
CREATE TABLE IF NOT EXISTS spans (
  trace_id {id} NOT NULL, span_id {id} NOT NULL, parent TEXT, name TEXT NOT NULL,
  start_ns {int8} NOT NULL, end_ns {int8}, is_tool INTEGER NOT NULL, tool_name TEXT,
  tool_state TEXT, is_error INTEGER NOT NULL, service TEXT, conversation_id TEXT, data {data} NOT NULL,
  PRIMARY KEY (trace_id, span_id));
CREATE INDEX IF NOT EXISTS spans_tool ON spans (tool_name) WHERE is_tool = 1;
CREATE TABLE IF NOT EXISTS traces (
  trace_id {id} PRIMARY KEY, service TEXT, conversation_id TEXT, root_name TEXT, root_ended INTEGER,
  start_ns {int8}, end_ns {int8}, last_seen_ns {int8} NOT NULL, spans INTEGER, tools INTEGER,
  errors INTEGER, open_tools INTEGER){rowid_free};
CREATE INDEX IF NOT EXISTS traces_start ON traces (start_ns, trace_id);
CREATE INDEX IF NOT EXISTS traces_conversation ON traces (conversation_id);
CREATE TABLE IF NOT EXISTS events (
  ns {int8} NOT NULL, trace_id {id} NOT NULL, span_id {id} NOT NULL, phase INTEGER NOT NULL,
  conversation_id TEXT, PRIMARY KEY (ns, trace_id, span_id, phase)){rowid_free};
CREATE INDEX IF NOT EXISTS events_trace ON events (trace_id, ns);
DROP INDEX IF EXISTS events_conversation;
CREATE TABLE IF NOT EXISTS logs (
  trace_id {id} NOT NULL, span_id {id} NOT NULL, digest TEXT NOT NULL, ns {int8} NOT NULL,
  data TEXT NOT NULL{log_seq}, UNIQUE (trace_id, span_id, digest));
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value{any} NOT NULL){rowid_free};
"""

# Version 2: which tool spans wait for an approval (``waiting``, set at ingest from the span's approval
# events), indexed, so the control channel's inbox finds every waiting call however many calls never ended.
# Spans stored before it count as not waiting (an application re-sends its waiting span's record when it
# asks again).
_CORE_V2: Final = """
ALTER TABLE spans ADD COLUMN waiting INTEGER NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS spans_waiting ON spans (start_ns, trace_id, span_id) WHERE waiting = 1;
"""

# Version 3: the tool name's index keyed by (tool name, trace), so a listing filtered by a tool (``?tool=``)
# asks of each trace it lists whether it called the tool in one look-up. Keyed by the name alone, SQLite's
# planner walked every call of that name for each trace listed: 0.4 to 0.5 s for a page of 50 traces of a
# tool with 5,000 calls (0.1 ms now), where the span's own key read that trace's spans only.
_CORE_V3: Final = """
DROP INDEX IF EXISTS spans_tool;
CREATE INDEX IF NOT EXISTS spans_tool_trace ON spans (tool_name, trace_id) WHERE is_tool = 1;
"""

# Version 4: a row of the event log may hold both events of a tool span (phase 2, ``_rows.cursor.BOTH``:
# the span was stored ended when first seen), one row written instead of two. No table changes; the version
# keeps a release that reads each row as one event (it would lose these spans' acts) from opening the store.
_CORE_V4: Final = ""

# The control channel's decisions, cancel requests and poll marks (``control``). Version 2 replaced version
# 1's decisions keyed by the model's call id: they are dropped, and the calls waiting then decided again.
_CONTROL_V1: Final = """
CREATE TABLE IF NOT EXISTS control_decisions (
  call_id {id} PRIMARY KEY, trace_id TEXT, span_id TEXT, execution_id TEXT, tool TEXT,
  decision TEXT NOT NULL, note TEXT, decided_by TEXT NOT NULL, arguments TEXT, decided_ns {int8} NOT NULL);
CREATE INDEX IF NOT EXISTS control_decisions_time ON control_decisions (decided_ns);
CREATE TABLE IF NOT EXISTS control_cancels (
  execution_id {id} PRIMARY KEY, trace_id TEXT, call_id TEXT, requested_by TEXT NOT NULL, note TEXT,
  requested_ns {int8} NOT NULL);
"""
_CONTROL_V2: Final = """
DROP TABLE IF EXISTS control_decisions;
DROP TABLE IF EXISTS control_cancels;
CREATE TABLE control_decisions (
  trace_id {id} NOT NULL, span_id {id} NOT NULL, execution_id TEXT NOT NULL, call_id TEXT, tool TEXT,
  decision TEXT NOT NULL, shown TEXT NOT NULL, note TEXT, decided_by TEXT NOT NULL, arguments TEXT,
  waiting_since_ns {int8}, decided_ns {int8} NOT NULL, PRIMARY KEY (trace_id, span_id));
CREATE INDEX control_decisions_time ON control_decisions (decided_ns);
CREATE INDEX control_decisions_call ON control_decisions (call_id);
CREATE INDEX control_decisions_span ON control_decisions (span_id);
CREATE TABLE control_cancels (
  trace_id {id} NOT NULL, span_id {id} NOT NULL, execution_id TEXT NOT NULL, call_id TEXT,
  requested_by TEXT NOT NULL, note TEXT, requested_ns {int8} NOT NULL, PRIMARY KEY (trace_id, span_id));
CREATE INDEX control_cancels_span ON control_cancels (span_id);
CREATE TABLE IF NOT EXISTS control_polls (
  trace_id {id} NOT NULL, span_id {id} NOT NULL, until_ns {int8} NOT NULL, PRIMARY KEY (trace_id, span_id));
"""

# Each part: its steps written above (history), then one per version that adds columns declared ``Added``.
CORE: Final = SchemaPart(
    "core", ((1, _CORE_V1), (2, _CORE_V2), (3, _CORE_V3), (4, _CORE_V4), *added_steps("core", 4))
)
CONTROL: Final = SchemaPart("control", ((1, _CONTROL_V1), (2, _CONTROL_V2), *added_steps("control", 2)))
# Every part of the schema, in the order they are applied.
PARTS: Final[list[SchemaPart]] = [CORE, CONTROL]


def ddl(text: str, engine: str) -> str:
    """``text`` with the engine's words filled in."""
    return DIALECTS[engine].sql(text)


def statements(text: str, engine: str) -> list[str]:
    """The statements of a migration for ``engine``, one by one (DDL holds no ``;`` but between them)."""
    return [s.strip() for s in ddl(text, engine).split(";") if s.strip()]


def pending(
    applied: Mapping[str, int], parts: Sequence[SchemaPart] | None = None
) -> list[tuple[SchemaPart, int, str]]:
    """``(part, version, DDL)`` of every migration not applied yet (``applied``: part -> its version), in
    order. A store at a version newer than this release knows is refused (``ValueError``)."""
    out: list[tuple[SchemaPart, int, str]] = []
    for part in PARTS if parts is None else parts:
        have = applied.get(part.name, 0)
        if have > part.version:
            raise ValueError(
                f"schema part {part.name!r} is at version {have}, newer than this release's {part.version}:"
                " upgrade toolspan"
            )
        out += [(part, version, text) for version, text in part.migrations if version > have]
    return out


def migrate(conn: Connection, where: str) -> None:
    """Apply every migration ``conn``'s store still needs, in the caller's transaction (``ValueError`` when
    the store is newer than this release); ``where`` names the store in the log."""
    conn.execute(VERSIONS_DDL)
    applied = {str(r[0]): int(r[1]) for r in conn.execute("SELECT part, version FROM schema_versions")}
    for part, version, text in pending(applied):
        for statement in statements(text, conn.dialect.engine):
            conn.raw.execute(statement)
        conn.execute(_VERSION_PUT, (part.name, version))
        _logger.info("toolspan serve: %s: schema %s migrated to version %d", where, part.name, version)
