"""The framework conventions' registry (``toolspan.bridge.facts._dialects``): every convention module holds
one ``Dialect`` and is registered, and every key a convention reads to index a span (its kind, its tool's
name, whether the call failed, its error) is one the server keeps of a span it does not parse
(``INDEX_KEYS``)."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from tests.support.corpus import SETUPS, spans
from toolspan import semconv as sc
from toolspan.bridge.facts import TOOL
from toolspan.bridge.facts import _dialects as dialects
from toolspan.bridge.facts._dialects import DIALECTS, Dialect
from toolspan.bridge.internal import INDEX_KEYS
from toolspan.bridge.model import Span


class _Recording(Mapping[str, Any]):
    """Attributes that note every key asked for (all of them when iterated)."""

    def __init__(self, attrs: Mapping[str, Any], read: set[str]) -> None:
        self._attrs = attrs
        self._read = read

    def __getitem__(self, key: str) -> Any:
        self._read.add(key)
        return self._attrs[key]

    def __contains__(self, key: object) -> bool:
        self._read.add(str(key))
        return key in self._attrs

    def __iter__(self) -> Iterator[str]:
        self._read.update(self._attrs)
        return iter(self._attrs)

    def __len__(self) -> int:
        return len(self._attrs)


def _index_reads(dialect: Dialect, span: Span) -> set[str]:
    """The keys ``dialect`` reads of ``span`` for the index: its markers, kind, failure, error, whether the
    span records no call, the tool's name (its keys and its hook)."""
    read: set[str] = set()
    attrs = _Recording(span.attributes, read)
    seen = dataclasses.replace(span, attributes=attrs)
    if dialect.marks(seen):
        dialect.kind(seen)
    for hook in (dialect.failed, dialect.other):
        if hook is not None:
            hook(attrs)
    if dialect.error is not None:
        dialect.error(seen)
    if dialect.name_of_tool is not None:
        dialect.name_of_tool(seen, attrs)
    read.update(dialect.tool_name_keys)
    return read


def _unindexed(dialect: Dialect, found: list[Span], index: frozenset[str]) -> set[str]:
    return {key for span in found for key in _index_reads(dialect, span)} - index


def _partial(span: Span) -> Span:
    kept = {k: v for k, v in span.attributes.items() if k in INDEX_KEYS}
    return dataclasses.replace(span, attributes=kept)


@functools.cache
def _corpus() -> list[Span]:
    return [span for name in SETUPS for span in spans(name, "traces.jsonl")]


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_every_key_a_convention_reads_for_the_index_is_indexed(dialect: Dialect) -> None:
    assert _unindexed(dialect, _corpus(), INDEX_KEYS) == set()
    assert set(dialect.markers) <= INDEX_KEYS
    assert dialect.index_keys <= INDEX_KEYS


def test_a_key_read_for_the_index_and_not_indexed_is_found() -> None:
    def kind(span: Span) -> str | None:
        return TOOL if span.attributes.get("acme.kind") == "tool" else None

    acme = Dialect(
        name="Acme", precedence=1000, markers=("acme.step",), kind=kind, index_keys=frozenset({"acme.step"})
    )
    span = Span("0" * 32, "0" * 15 + "1", None, "step", 1, 2, attributes={"acme.step": 1})
    assert _unindexed(acme, [span], INDEX_KEYS | acme.index_keys) == {"acme.kind"}


@pytest.mark.parametrize("dialect", [d for d in DIALECTS if d.read is not None], ids=lambda d: d.name)
def test_the_tool_name_a_convention_reads_needs_only_indexed_keys(dialect: Dialect) -> None:
    assert dialect.read is not None
    named = 0
    for span in _corpus():
        if not dialect.marks(span):
            continue
        name = dialect.read(span).get(sc.GEN_AI_TOOL_NAME)
        named += name is not None
        assert dialect.read(_partial(span)).get(sc.GEN_AI_TOOL_NAME) == name, span.name
    assert named, f"no span of the corpus has a tool named by {dialect.name}"


def test_every_convention_module_holds_one_dialect_found_in_its_place() -> None:
    for info in pkgutil.iter_modules(dialects.__path__):
        if info.name == "_record":
            continue
        module = importlib.import_module(f"{dialects.__name__}.{info.name}")
        held = [v for v in vars(module).values() if isinstance(v, Dialect)]
        assert len(held) == 1, info.name
        assert held[0] in DIALECTS, f"{info.name}: {held[0].name} is not in DIALECTS"
    names = [d.name for d in DIALECTS]
    assert len(set(names)) == len(names)
    # Each convention its own place: the order is what the conventions state, never a tie broken by chance.
    places = [d.precedence for d in DIALECTS]
    assert places == sorted(set(places))
