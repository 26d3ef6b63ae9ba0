"""No import circle anywhere in toolspan: the graph of every import of the package (at module level, inside
functions and under ``TYPE_CHECKING``) has no cycle, so each module can be read, loaded and tested after the
modules it imports. grimp, which import-linter installs and ``lint-imports`` checks the layers with, builds
the graph."""

from __future__ import annotations

import textwrap
from pathlib import Path

import grimp
import pytest


def circles(package: str) -> list[list[str]]:
    """Every import circle of ``package``: its strongly connected components of more than one module (and
    any module that imports itself), each sorted, found iteratively (Tarjan)."""
    graph = grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=None)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    found.append(sorted(component))
    return sorted(found)


def test_toolspan_has_no_import_circle() -> None:
    found = circles("toolspan")
    assert found == []


def test_a_circle_through_a_function_or_a_type_checking_import_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "circled"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from circled import b\n")
    (package / "b.py").write_text(
        textwrap.dedent(
            """\
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from circled import c
            """
        )
    )
    (package / "c.py").write_text("import circled.a\n")
    (package / "d.py").write_text("import circled.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert circles("circled") == [["circled.a", "circled.b", "circled.c"]]
