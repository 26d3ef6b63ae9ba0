"""Each stored table declared once (``sql.tables``) agrees with the database the schema's migrations build, on
SQLite and on a real PostgreSQL: every column, in order, of the declared type (a new store, and a store of
0.1.0 migrated); and a column declared ``Added`` is added by its migration, written from the declaration."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import pytest

from tests.support.postgres import Postgres
from toolspan.server._rows.columns import Added, Id
from toolspan.server._store import schema
from toolspan.server._store.api import StoreApi
from toolspan.server._store.dialect import DIALECTS, POSTGRES, SQLITE
from toolspan.server._store.engines import open_store
from toolspan.server._store.sql import tables


def _stored(store: StoreApi, table: str) -> list[tuple[str, str]]:
    """``(column, type)`` of ``table`` as the database has it, in order, the type as its DDL said."""
    with store.transaction() as conn:
        if store.engine == SQLITE:
            return [(str(r[1]), str(r[2])) for r in conn.execute(f"PRAGMA table_info({table})").fetchall()]
        rows = conn.execute(
            "SELECT column_name, upper(data_type), collation_name FROM information_schema.columns"
            " WHERE table_name = ? ORDER BY ordinal_position",
            (table,),
        ).fetchall()
    return [
        (str(name), kind + (f' COLLATE "{collation}"' if collation else "")) for name, kind, collation in rows
    ]


def _declared(table: tables.Table, engine: str) -> list[tuple[str, str]]:
    """``(column, type)`` of ``table``'s declaration on ``engine``, the type in the engine's words."""
    return [(c.name, DIALECTS[engine].sql(c.type).strip()) for c in table.stored(engine)]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.processes)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "s.db")
    else:
        postgres: Postgres = request.getfixturevalue("postgres")
        yield postgres.fresh_url()


@pytest.mark.parametrize("table", tables.TABLES, ids=lambda t: t.name)
def test_every_declared_table_is_the_table_the_migrations_build(db: str, table: tables.Table) -> None:
    store = open_store(db)
    try:
        assert _stored(store, table.name) == _declared(table, store.engine)
    finally:
        store.close()


def test_a_store_of_0_1_0_migrated_has_the_declared_tables(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as old:  # what 0.1.0 wrote: its tables, no version table
        old.executescript(schema.ddl(schema.CORE.migrations[0][1], schema.SQLITE))
    store = open_store(str(path))
    try:
        for table in tables.TABLES:
            assert _stored(store, table.name) == _declared(table, SQLITE), table.name
    finally:
        store.close()


def test_the_declared_types_are_bound_as_postgresql_arrays_of_their_type() -> None:
    arrays = dict(zip(tables.SPANS.names, tables.SPANS.arrays, strict=True))
    assert (arrays["trace_id"], arrays["start_ns"], arrays["is_tool"], arrays["data"]) == (
        "text[]",
        "bigint[]",
        "int[]",
        "bytea[]",
    )
    assert DIALECTS[POSTGRES].sql(tables.SPANS.columns[0].type) == 'TEXT COLLATE "C"'


class _Later(NamedTuple):
    id: Id
    note: str | None
    seen: Annotated[int, Added(2)] = 0


def test_a_column_declared_added_is_added_by_its_migration(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    later = tables.Table("later", _Later, ("id",), "later")
    monkeypatch.setattr(tables, "TABLES", (*tables.TABLES, later))
    assert tables.added_steps("later", 1) == (
        (2, "ALTER TABLE later ADD COLUMN seen INTEGER NOT NULL DEFAULT 0;"),
    )
    first = schema.SchemaPart(
        "later", ((1, "CREATE TABLE IF NOT EXISTS later (id {id} PRIMARY KEY, note TEXT)"),)
    )
    monkeypatch.setattr(schema, "PARTS", [*schema.PARTS, first])
    store = open_store(db)
    with store.transaction() as conn:
        conn.execute("INSERT INTO later VALUES (?, ?)", ("a", "before"))
    store.close()
    grown = schema.SchemaPart("later", (*first.migrations, *tables.added_steps("later", 1)))
    monkeypatch.setattr(schema, "PARTS", [*schema.PARTS[:-1], grown])
    store = open_store(db)
    try:
        assert _stored(store, "later") == _declared(later, store.engine)
        with store.transaction() as conn:
            rows: list[Any] = conn.execute("SELECT id, note, seen FROM later").fetchall()
        assert [tuple(r) for r in rows] == [("a", "before", 0)]  # a row stored before: the default
    finally:
        store.close()
