"""Many rows in few SQLite statements.

``executemany`` steps once per row, and the ``sqlite3`` module hands the GIL back and forth at every step:
with another thread busy in Python (the next request being parsed) each hand-back can wait out the
interpreter's whole switch interval. One multi-row ``INSERT`` per chunk (as many rows as SQLite's limit on
bound variables allows) steps once, so a batch of spans costs a handful of GIL hand-backs, not thousands.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from functools import lru_cache
from itertools import chain
from typing import Any, Final

__all__ = ["insert_flat", "insert_rows"]

_DEFAULT_LIMIT: Final = 999  # SQLite's compile-time default before 3.32


@lru_cache(maxsize=64)
def _statement(head: str, width: int, rows: int, tail: str = "") -> str:
    row = "(" + ",".join("?" * width) + ")"
    return f"{head} VALUES " + ",".join([row] * rows) + (f" {tail}" if tail else "")


def _limit(db: sqlite3.Connection) -> int:
    getlimit = getattr(db, "getlimit", None)  # Python 3.11+
    if getlimit is None:
        return _DEFAULT_LIMIT
    return int(getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))  # type: ignore[attr-defined,unused-ignore]


def insert_rows(
    db: sqlite3.Connection, head: str, rows: Sequence[Sequence[Any]], width: int, tail: str = ""
) -> int:
    """``head`` (``INSERT [OR ...] INTO table [(columns)]``) with every row of ``rows`` (``width`` values
    each) and ``tail`` (a conflict clause) after them: full chunks, then the rest in power-of-two chunks, so
    few distinct statements are prepared; returns how many rows were written."""
    per = max(1, _limit(db) // width)
    done, total, written = 0, len(rows), 0
    while done < total:
        count = min(per, total - done)
        if count < per:
            count = 1 << (count.bit_length() - 1)
        params = list(chain.from_iterable(rows[done : done + count]))
        written += db.execute(_statement(head, width, count, tail), params).rowcount
        done += count
    return written


def insert_flat(db: sqlite3.Connection, head: str, values: list[Any], width: int, tail: str = "") -> int:
    """``insert_rows`` of rows given as one list of their values, row after row (``width`` each): each
    chunk's parameters are a slice of it, no row is looked at in Python."""
    per = max(1, _limit(db) // width)
    done, total, written = 0, len(values) // width, 0
    while done < total:
        count = min(per, total - done)
        if count < per:
            count = 1 << (count.bit_length() - 1)
        params = values[done * width : (done + count) * width]
        written += db.execute(_statement(head, width, count, tail), params).rowcount
        done += count
    return written
