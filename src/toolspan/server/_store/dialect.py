"""The store's two SQL dialects, in one place. Every statement is written once (``sql``, ``schema``), with
``?`` placeholders and a few words in braces standing in for what differs; ``Dialect.sql`` fills them in for
its engine:

- ``?``: a placeholder (PostgreSQL's ``%s``; the words below are written in each engine's own);
- ``{ids}``: a list parameter read as the table ``j(value)`` (SQLite's ``json_each`` of the list as JSON text,
  PostgreSQL's ``unnest`` of an array);
- ``{join}`` before the table joined to ``{ids}`` (SQLite's ``CROSS JOIN``, which keeps the list the outer
  loop; ``JOIN``);
- ``{log_order}``: the order log records arrived in (SQLite's ``rowid``, PostgreSQL's ``seq``);
- ``{greatest}`` of two values (``max``, ``greatest``);
- ``{root_has}``: the root's stored record (``r.data``) holds the bytes ``?``, ASCII case ignored;

and, in the schema's DDL, ``{id}``, ``{int8}``, ``{data}``, ``{rowid_free}``, ``{any}`` and ``{log_seq}``.
What differs beyond the text is here too: how a parameter is bound (a list as JSON text for ``json_each``, or
as an array of each column's type, ``sql.tables``; PostgreSQL's text holds no NUL), how a stored record comes
back (``record``), how many rows go in one ``INSERT`` (``insert``; on PostgreSQL a request's new rows go in by
``COPY``, ``insert_flat``), and how many rows one read may hand back at once (``all_rows``).
"""

from __future__ import annotations

import functools
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Final

from toolspan.server._store.bulk import insert_flat, insert_rows
from toolspan.server._store.sql.tables import Table

__all__ = ["DIALECTS", "POSTGRES", "SQLITE", "Connection", "Dialect"]

SQLITE: Final = "sqlite"
POSTGRES: Final = "postgres"

_WORD: Final = re.compile(r"\{(\w+)\}")


class Dialect(ABC):
    """What one engine's SQL differs in (see the module's documentation); one instance per engine."""

    def __init__(self, engine: str, words: Mapping[str, str], placeholder: str) -> None:
        self.engine = engine
        self._words = dict(words)
        self._placeholder = placeholder
        self.sql = functools.lru_cache(maxsize=512)(self._fill)

    def _fill(self, text: str) -> str:
        """``text`` with the engine's placeholders, then its words (written in the engine's own placeholders),
        cached as ``sql``."""
        if self._placeholder != "?":
            text = text.replace("%", "%%").replace("?", self._placeholder)
        return _WORD.sub(lambda m: self._words.get(m.group(1), m.group(0)), text)

    def param(self, value: Any) -> Any:
        """``value`` as the engine binds it (a list: the rows of ``{ids}``)."""
        return value

    def record(self, raw: Any) -> str | bytes:
        """A stored record as ``codec.decode`` takes it."""
        return raw  # type: ignore[no-any-return]

    @abstractmethod
    def insert(self, conn: Connection, table: Table, rows: Sequence[Sequence[Any]], conflict: str) -> int:
        """``INSERT`` every row of ``rows`` (rows of ``table``: its columns, in order) into ``table`` with the
        conflict clause ``conflict`` (``table.upsert``, ``tables.DO_NOTHING``), in as few statements as the
        engine allows; returns how many rows were written."""

    @abstractmethod
    def insert_flat(self, conn: Connection, table: Table, values: list[Any], conflict: str) -> int:
        """``insert`` of rows given as one list of their values, row after row (as many as ``table`` has
        columns each)."""

    def all_rows(
        self, conn: Connection, sql: str, params: Sequence[Any], columns: Sequence[str]
    ) -> list[Any]:
        """Every row of the select ``sql`` (its output columns named ``columns``)."""
        return list(conn.execute(sql, params).fetchall())


class _Sqlite(Dialect):
    def param(self, value: Any) -> Any:
        return json.dumps(value) if isinstance(value, list) else value

    def insert(self, conn: Connection, table: Table, rows: Sequence[Sequence[Any]], conflict: str) -> int:
        head = f"INSERT INTO {table.name} ({table.listed})"
        return insert_rows(conn.raw, head, rows, len(table.names), conflict)

    def insert_flat(self, conn: Connection, table: Table, values: list[Any], conflict: str) -> int:
        head = f"INSERT INTO {table.name} ({table.listed})"
        return insert_flat(conn.raw, head, values, len(table.names), conflict)

    def all_rows(
        self, conn: Connection, sql: str, params: Sequence[Any], columns: Sequence[str]
    ) -> list[Any]:
        # One result row (one step of SQLite, see ``insert``) holding every row as JSON.
        packed = f"SELECT json_group_array(json_array({', '.join(columns)})) FROM ({sql})"
        found = conn.execute(packed, params).fetchone()[0]
        return list(json.loads(found))


# The type ``COPY`` writes a column's values as, by the array type ``_unnest`` binds it as (``Column.array``).
_COPY_TYPES: Final = {"int[]": "int4", "bigint[]": "int8", "bytea[]": "bytea", "text[]": "text"}
# The SQLSTATE classes of what ``COPY`` refuses and an ``INSERT`` may take: data exceptions (22: a text
# holding NUL, 22021) and integrity constraint violations (23: a row stored already, 23505, which the
# ``INSERT``'s conflict clause takes).
_COPY_REFUSED: Final = ("22", "23")


def _record_bytes(column: Sequence[Any]) -> list[Any]:
    # Both kinds of record are bytes on PostgreSQL: a record made as JSON text is stored as its UTF-8 bytes.
    return [v.encode("utf-8") if isinstance(v, str) else v for v in column]


def _no_nul(value: Any) -> Any:
    # PostgreSQL's text cannot hold NUL (OTLP strings can): it is stored and looked up as U+FFFD in the index
    # columns (the record itself, in ``data``, keeps it).
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


class _Postgres(Dialect):
    def param(self, value: Any) -> Any:
        return _no_nul(value)

    def record(self, raw: Any) -> str | bytes:
        # Both kinds of record are bytes here: a JSON record (its first byte ``[``) is its UTF-8 text.
        data = bytes(raw)
        return data.decode("utf-8") if data[:1] == b"[" else data

    def insert(self, conn: Connection, table: Table, rows: Sequence[Sequence[Any]], conflict: str) -> int:
        if not rows:
            return 0
        return self._unnest(conn, table, list(zip(*rows, strict=True)), conflict)

    def insert_flat(self, conn: Connection, table: Table, values: list[Any], conflict: str) -> int:
        # The rows of a request go in by ``COPY``: PostgreSQL takes them at about two thirds of the cost of
        # an ``INSERT`` of arrays, and psycopg writes them in C. ``COPY`` has no conflict clause and refuses a
        # text holding NUL, so it runs in a savepoint: rows it cannot take (one stored already, a NUL) go in
        # as ``insert`` writes them, the conflict clause and all.
        if not values:
            return 0
        width = len(table.names)
        try:
            with conn.raw.transaction():
                return self._copy(conn, table, values, width)
        except Exception as e:  # psycopg's errors, told by their SQLSTATE (psycopg loads with its store only)
            if str(getattr(e, "sqlstate", None) or "")[:2] not in _COPY_REFUSED:
                raise
        return self._unnest(conn, table, [values[i::width] for i in range(width)], conflict)

    def _copy(self, conn: Connection, table: Table, values: list[Any], width: int) -> int:
        types = [_COPY_TYPES[kind] for kind in table.arrays]
        records = [i for i, kind in enumerate(table.arrays) if kind == "bytea[]"]
        if any(str in set(map(type, values[i::width])) for i in records):
            values = list(values)
            for i in records:
                values[i::width] = _record_bytes(values[i::width])
        statement = f"COPY {table.name} ({table.listed}) FROM STDIN (FORMAT BINARY)"
        with conn.raw.cursor() as cursor, cursor.copy(statement) as copy:
            copy.set_types(types)
            write = copy.write_row
            for i in range(0, len(values), width):
                write(values[i : i + width])
        return len(values) // width

    def _unnest(self, conn: Connection, table: Table, columns: Sequence[Sequence[Any]], conflict: str) -> int:
        # One array per column, of the column's type (``Column.array``).
        arrays = table.arrays
        values: list[list[Any]] = []
        for kind, column in zip(arrays, columns, strict=True):
            if kind == "bytea[]":
                values.append(_record_bytes(column))
            elif kind == "text[]":
                values.append([_no_nul(v) for v in column])
            else:
                values.append(list(column))
        unnest = ", ".join(f"%b::{kind}" for kind in arrays)
        sql = f"INSERT INTO {table.name} ({table.listed}) SELECT * FROM unnest({unnest}) {conflict}"
        return max(0, int(conn.raw.execute(sql, values).rowcount))


DIALECTS: Final[Mapping[str, Dialect]] = {
    SQLITE: _Sqlite(
        SQLITE,
        {
            "ids": "json_each(?) AS j",
            "join": "CROSS JOIN",
            "log_order": "rowid",
            "greatest": "max",
            "root_has": "instr(CAST(lower(r.data) AS BLOB), ?) > 0",
            "id": "TEXT",
            "int8": "INTEGER",
            # SQLite keeps each value's own type: a JSON record as TEXT, a protobuf record as a BLOB.
            "data": "TEXT",
            "rowid_free": " WITHOUT ROWID",
            "any": "",
            # Log records are read in arrival order: SQLite's rowid.
            "log_seq": "",
        },
        "?",
    ),
    POSTGRES: _Postgres(
        POSTGRES,
        {
            "ids": "unnest(%b::text[]) AS j(value)",
            "join": "JOIN",
            "log_order": "seq",
            "greatest": "greatest",
            # No lower() of bytes: both sides in the ``escape`` text form of bytes (ASCII only: the bytes
            # outside printable ASCII as ``\ooo``), where lower() changes the ASCII letters only.
            "root_has": "strpos(lower(encode(r.data, 'escape')), encode(%s::bytea, 'escape')) > 0",
            # Ids compare byte by byte, as Python compares cursors (whatever the database's own collation).
            "id": 'TEXT COLLATE "C"',
            "int8": "BIGINT",
            # Both kinds of record as bytes (a JSON record is its UTF-8 text, told apart by its first byte).
            "data": "BYTEA",
            "rowid_free": "",
            "any": " TEXT",
            "log_seq": ", seq BIGINT GENERATED BY DEFAULT AS IDENTITY",
        },
        "%s",
    ),
}


class Connection:
    """A connection of either engine that runs statements written for both (``?``, the words above)."""

    __slots__ = ("dialect", "raw")

    def __init__(self, raw: Any, dialect: Dialect) -> None:
        self.raw = raw  # the engine's own connection (``sqlite3`` or ``psycopg``)
        self.dialect = dialect

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run ``sql`` with ``params``; the engine's cursor (``fetchone``, ``fetchall``, ``rowcount``)."""
        dialect = self.dialect
        return self.raw.execute(dialect.sql(sql), [dialect.param(p) for p in params])
