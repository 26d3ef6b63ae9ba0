"""The environment variables: one module defines them, the table of docs/environment.md repeats it exactly."""

from __future__ import annotations

import re

import pytest

from tests.support.paths import REPO
from toolspan._util import env as _env

TABLE = REPO / "docs" / "environment.md"


def _readme_rows() -> list[tuple[str, str, str]]:
    table = TABLE.read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([A-Z0-9_]+)` \| (.*?) \| (.*) \|$", table, flags=re.MULTILINE)
    return [(name, default, doc) for name, default, doc in rows]


def test_readme_table_lists_every_variable_in_order_with_its_default_and_meaning() -> None:
    expected = [(v.name, f"`{v.default}`" if v.default else "—", v.doc) for v in _env.ALL]
    assert _readme_rows() == expected


def test_every_variable_is_defined_once() -> None:
    names = [v.name for v in _env.ALL]
    assert len(names) == len(set(names))
    module_vars = {v.name for v in vars(_env).values() if isinstance(v, _env.EnvVar)}
    assert module_vars == set(names)


@pytest.mark.parametrize("var", _env.ALL, ids=lambda v: v.name)
def test_get_is_none_when_unset_or_blank_and_the_stripped_value_when_set(
    var: _env.EnvVar, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(var.name, raising=False)
    assert _env.get(var) is None
    monkeypatch.setenv(var.name, "   ")
    assert _env.get(var) is None
    monkeypatch.setenv(var.name, " x-value ")
    assert _env.get(var) == "x-value"
