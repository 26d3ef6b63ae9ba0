"""Public means documented: each public module of the bridge exports exactly what ``docs/bridge.md``'s
"Python API" section documents for it (the names before the colon of each of its lines), and every name it
exports resolves. What toolspan's own packages read beyond them is in the internal modules, not in a
facade."""

from __future__ import annotations

import importlib
import re

import pytest

from tests.support.paths import REPO

_PAGE = REPO / "docs" / "bridge.md"
_MODULES = ("toolspan.bridge.readers", "toolspan.bridge.facts", "toolspan.bridge.views")
_NAME = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")


def _documented() -> dict[str, set[str]]:
    """The names each ``### `module``` subsection of "Python API" documents, by module."""
    text = _PAGE.read_text("utf-8")
    api = text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    found: dict[str, set[str]] = {}
    for part in api.split("\n### ")[1:]:
        heading, _, body = part.partition("\n")
        names = found.setdefault(heading.strip().strip("`"), set())
        lines = re.split(r"\n- ", "\n" + body)[1:]
        for line in lines:
            names.update(_NAME.findall(line.split(":", 1)[0]))
    return found


def test_the_page_documents_each_public_module_of_the_bridge() -> None:
    assert sorted(_documented()) == sorted(_MODULES)


@pytest.mark.parametrize("name", _MODULES)
def test_a_public_module_exports_exactly_what_the_page_documents(name: str) -> None:
    module = importlib.import_module(name)
    exported = set(module.__all__)
    documented = _documented()[name]
    assert sorted(exported - documented) == [], "exported, not documented in docs/bridge.md"
    assert sorted(documented - exported) == [], "documented in docs/bridge.md, not exported"
    assert len(module.__all__) == len(exported)  # each name once
    for item in module.__all__:
        getattr(module, item)


@pytest.mark.parametrize("name", ["toolspan.bridge.internal", "toolspan.bridge.views.internal"])
def test_no_internal_name_is_also_public(name: str) -> None:
    internal = set(importlib.import_module(name).__all__)
    public = {n for m in _MODULES for n in importlib.import_module(m).__all__}
    assert sorted(internal & public) == []
    module = importlib.import_module(name)
    for item in module.__all__:
        getattr(module, item)
