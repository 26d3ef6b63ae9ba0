"""How a row type declares the columns of its table: each field is a column, in order, stored as its type
says: ``str`` as text, ``int`` and ``bool`` as integers, and the kinds below; ``| None`` when it may be NULL,
a default when the column has one (a column added later says when: ``Added``). The store builds each table
from its row (``_store.sql.tables``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Final

__all__ = ["Added", "AnyValue", "Id", "Int8", "Kind", "Record"]


@dataclass(frozen=True, slots=True)
class Kind:
    """A column's stored type beyond what its Python type says: the schema's word for it (``{id}``, ...)."""

    word: str


ID: Final = Kind("id")
INT8: Final = Kind("int8")
DATA: Final = Kind("data")
ANY: Final = Kind("any")

# An id (trace, span): compared byte by byte on every engine.
Id = Annotated[str, ID]
# A 64-bit integer (nanosecond times): PostgreSQL's INTEGER has 32 bits.
Int8 = Annotated[int, INT8]
# A stored span: JSON text or protobuf bytes, as it came in.
Record = Annotated[str | bytes, DATA]
# A value of any type (SQLite keeps each value's own; PostgreSQL stores text).
AnyValue = Annotated[str | int, ANY]


@dataclass(frozen=True, slots=True)
class Added:
    """A column added after its table was first made: the version of its part of the schema that adds it
    (``ALTER TABLE ... ADD COLUMN``, written from the column's declaration)."""

    version: int
