"""The one versioned schema on both engines: the parts in ``schema.PARTS`` migrated at start and recorded in
``schema_versions``, a part added later (another module's tables) migrated when a store opens, its SQL
with ``?`` placeholders through ``transaction()`` on SQLite and on a real PostgreSQL, a store newer than
the release refused with one line."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.support.postgres import Postgres
from toolspan.server._rows.errors import StoreError
from toolspan.server._store import schema
from toolspan.server._store.api import StoreApi
from toolspan.server._store.engines import open_store

EXTRA = schema.SchemaPart(
    "extra",
    (
        (1, "CREATE TABLE IF NOT EXISTS extra (id TEXT PRIMARY KEY, at_ns {int8} NOT NULL)"),
        (2, "CREATE INDEX IF NOT EXISTS extra_at ON extra (at_ns)"),
    ),
)


# The version of each part this release knows (a column added later moves one: ``sql.tables.Added``).
RELEASED = [("control", schema.CONTROL.version), ("core", schema.CORE.version)]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.processes)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "s.db")
    else:
        postgres: Postgres = request.getfixturevalue("postgres")
        yield postgres.fresh_url()


def _versions(store: StoreApi) -> list[tuple[str, int]]:
    with store.transaction() as conn:
        return sorted(tuple(r) for r in conn.execute("SELECT part, version FROM schema_versions").fetchall())


def test_a_part_added_later_is_migrated_when_the_store_opens_and_its_sql_runs_on_both_engines(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(db)
    assert _versions(store) == RELEASED
    store.close()
    monkeypatch.setattr(schema, "PARTS", [*schema.PARTS, EXTRA])
    store = open_store(db)
    try:
        assert _versions(store) == [*RELEASED, ("extra", 2)]
        with store.transaction() as conn:
            conn.execute("INSERT INTO extra VALUES (?, ?)", ("a", 2**62))
            conn.execute("INSERT INTO extra VALUES (?, ?)", ("b", 1))
        with store.transaction() as conn:
            rows = conn.execute("SELECT id, at_ns FROM extra WHERE at_ns > ? ORDER BY id", (0,)).fetchall()
        assert [tuple(r) for r in rows] == [("a", 2**62), ("b", 1)]
        with pytest.raises((sqlite3.IntegrityError, psycopg.IntegrityError)):
            _insert_twice(store)  # a duplicate key: the whole transaction rolled back
        with store.transaction() as conn:
            assert conn.execute("SELECT count(*) FROM extra").fetchone()[0] == 2
    finally:
        store.close()


def _insert_twice(store: StoreApi) -> None:
    with store.transaction() as conn:
        conn.execute("INSERT INTO extra VALUES (?, ?)", ("c", 3))
        conn.execute("INSERT INTO extra VALUES (?, ?)", ("c", 3))


def test_a_store_newer_than_this_release_is_refused_with_one_line(db: str) -> None:
    store = open_store(db)
    with store.transaction() as conn:
        conn.execute("UPDATE schema_versions SET version = ? WHERE part = ?", (99, "core"))
    store.close()
    with pytest.raises(StoreError) as caught:
        open_store(db)
    text = str(caught.value)
    assert f"newer than this release's {schema.CORE.version}: upgrade toolspan" in text
    assert "\n" not in text


def test_a_store_of_0_1_0_is_taken_under_version_control_and_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as old:  # what 0.1.0 wrote: the tables, no version table
        old.executescript(schema.ddl(schema.CORE.migrations[0][1], schema.SQLITE))
        old.execute("INSERT INTO meta VALUES ('clock', 42)")
        old.execute(
            "INSERT INTO spans VALUES"
            " ('a', 'b', NULL, 'execute_tool x', 1, NULL, 1, 'x', NULL, 0, NULL, NULL, '[]')"
        )
    store = open_store(str(path))
    try:
        assert _versions(store) == RELEASED  # the control tables joined
        assert store.clock() >= 42
        with store.transaction() as conn:  # the span kept, not waiting (it asked before the column existed)
            assert conn.execute("SELECT span_id, waiting FROM spans").fetchall() == [("b", 0)]
    finally:
        store.close()


def test_decisions_of_control_version_1_are_dropped_by_version_2(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Version 1 keyed a decision by the model's call id (it named no exact call): its decisions are not
    carried over, so the calls waiting then are decided again, each on its own."""
    monkeypatch.setattr(
        schema, "PARTS", [schema.CORE, schema.SchemaPart("control", schema.CONTROL.migrations[:1])]
    )
    store = open_store(db)
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO control_decisions VALUES (?,?,?,?,?,?,?,?,?,?)",
            ("toolu_1", "a" * 32, "b" * 16, "exec_" + "b" * 16, "t", "allow", None, "x", None, 1),
        )
    store.close()
    monkeypatch.setattr(schema, "PARTS", [schema.CORE, schema.CONTROL])
    store = open_store(db)
    try:
        assert _versions(store) == RELEASED
        with store.transaction() as conn:
            assert conn.execute("SELECT count(*) FROM control_decisions").fetchone()[0] == 0
    finally:
        store.close()


def test_a_listing_by_tool_asks_each_trace_in_one_look_up_of_tool_and_trace(tmp_path: Path) -> None:
    """Version 3 keys the tool name's index by (tool name, trace): a listing filtered by a tool asks of each
    trace whether it called the tool there, on a store of 0.1.0 migrated as on a new one. (Keyed by the name
    alone, SQLite walked every call of that name for each trace listed.)"""
    from toolspan.server._store.sql import listing

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as old:  # 0.1.0's tables, with its index by tool name alone
        old.executescript(schema.ddl(schema.CORE.migrations[0][1], schema.SQLITE))
    for db in (str(path), str(tmp_path / "new.db")):
        store = open_store(db)
        try:
            with store.transaction() as conn:
                query = f"EXPLAIN QUERY PLAN SELECT trace_id FROM traces WHERE {listing.TOOL_CALLED}"
                plan = [str(row[-1]) for row in conn.execute(query, ("search",)).fetchall()]
                indexes = {
                    str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
                }
            assert "SEARCH s USING INDEX spans_tool_trace (tool_name=? AND trace_id=?)" in plan, (db, plan)
            assert "spans_tool" not in indexes
        finally:
            store.close()
