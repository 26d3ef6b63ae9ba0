"""Multi-row inserts: every row stored once, in order, whatever the count against the variable limit."""

from __future__ import annotations

import sqlite3

import pytest

from toolspan.server._store.bulk import _statement, insert_flat, insert_rows


@pytest.mark.parametrize("count", [0, 1, 2, 75, 76, 77, 512, 1000, 3001])
def test_every_row_is_inserted_once_in_order(count: int) -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (a INTEGER, b TEXT, c BLOB)")
    rows = [(i, f"row {i}", bytes([i % 256]) * 3) for i in range(count)]
    insert_rows(db, "INSERT INTO t", rows, 3)
    assert db.execute("SELECT a, b, c FROM t ORDER BY rowid").fetchall() == rows


@pytest.mark.parametrize("count", [0, 1, 2, 75, 76, 77, 512, 1000, 3001])
def test_rows_given_as_one_list_of_values_are_each_inserted_once_in_order(count: int) -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (a INTEGER, b TEXT, c BLOB)")
    rows = [(i, f"row {i}", bytes([i % 256]) * 3) for i in range(count)]
    written = insert_flat(db, "INSERT INTO t", [v for row in rows for v in row], 3)
    assert written == count
    assert db.execute("SELECT a, b, c FROM t ORDER BY rowid").fetchall() == rows


def test_a_conflict_clause_in_the_head_applies_to_every_row() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)")
    insert_rows(db, "INSERT INTO t", [("a", 1), ("b", 2)], 2)
    insert_rows(db, "INSERT OR REPLACE INTO t", [("a", 3), ("c", 4)], 2)
    assert db.execute("SELECT k, v FROM t ORDER BY k").fetchall() == [("a", 3), ("b", 2), ("c", 4)]


def test_the_statement_lists_one_placeholder_group_per_row() -> None:
    assert _statement("INSERT INTO t", 2, 3) == "INSERT INTO t VALUES (?,?),(?,?),(?,?)"
