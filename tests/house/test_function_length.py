"""No function of toolspan is longer than 80 lines (from its ``def``, or its first decorator, to its last
line, docstring included): a function longer than a screen is several concepts, and each gets a name."""

from __future__ import annotations

import ast
from pathlib import Path

import toolspan

MAX_LINES = 80
SRC = Path(toolspan.__file__).resolve().parent


def long_functions(root: Path, limit: int) -> list[str]:
    """``path:line name (lines)`` of every function under ``root`` longer than ``limit`` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lines = (node.end_lineno or node.lineno) - start + 1
                if lines > limit:
                    found.append(f"{path.relative_to(root).as_posix()}:{node.lineno} {node.name} ({lines})")
    return found


def test_no_function_is_over_80_lines() -> None:
    assert long_functions(SRC, MAX_LINES) == []


def test_a_long_function_is_found(tmp_path: Path) -> None:
    body = "\n".join(f"        x{n} = {n}" for n in range(MAX_LINES))
    (tmp_path / "m.py").write_text(
        f"@staticmethod\ndef short():\n    pass\n\n\nclass C:\n    def long(self):\n{body}\n"
    )
    assert long_functions(tmp_path, MAX_LINES) == [f"m.py:7 long ({MAX_LINES + 1})"]
