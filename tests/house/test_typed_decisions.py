"""The decision path is typed end to end: what decides whether a tool body runs (the hooks' ``Decider``, the
decision chain, the policy guard, replay's decider, the approvers' ask) says what it takes and gives, with
no ``Any`` in a signature. ``ToolInfo`` and the types the path shares live in one leaf,
``toolspan._instrument.info``, that the hooks, the chain and the tool import."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import typing
from collections.abc import Callable, Iterator
from types import ModuleType

import pytest

from toolspan._approvals import asking, cancel
from toolspan._decisions import chain, guard, replay
from toolspan._instrument import hooks, info, tool

_ANY = re.compile(r"\bAny\b")

# Every function of these modules, nested ones too, and every alias they declare.
_WHOLE: tuple[ModuleType, ...] = (info, chain)
# The decision path's entries in the modules that also hold other things.
_ENTRIES: tuple[tuple[ModuleType, str], ...] = (
    (hooks, "_undecided"),
    (hooks, "_replaying"),
    (hooks, "install_decider"),
    (hooks, "uninstall_decider"),
    (guard, "PolicyGuard.check"),
    (replay, "_Session.prepare"),
    (replay, "_Session.decide"),
    (asking, "ask_sync"),
    (asking, "ask_async"),
    (cancel, "run_cancellable"),
)
_ALIASES: tuple[tuple[ModuleType, str], ...] = (
    (hooks, "Decider"),
    *((info, name) for name in ("Arguments", "Body", "CallArgs", "CallKind", "CallKwargs", "Serve")),
    (info, "JsonValue"),
)


def _node(module: ModuleType, qualname: str) -> ast.AST:
    tree = ast.parse(inspect.getsource(module))
    scope: ast.AST = tree
    for part in qualname.split("."):
        scope = next(
            n
            for n in ast.iter_child_nodes(scope)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == part
        )
    return scope


def _annotations(node: ast.AST) -> Iterator[ast.expr]:
    """Every annotation under ``node`` (arguments, returns, annotated names) and the value of each alias."""
    for n in ast.walk(node):
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
            every = [*n.args.posonlyargs, *n.args.args, *n.args.kwonlyargs, n.args.vararg, n.args.kwarg]
            yield from (a.annotation for a in every if a is not None and a.annotation is not None)
            if n.returns is not None:
                yield n.returns
        elif isinstance(n, ast.AnnAssign):
            yield n.annotation
            if n.value is not None and "TypeAlias" in ast.unparse(n.annotation):
                yield n.value


def _with_any(module: ModuleType, node: ast.AST) -> list[str]:
    texts = ((a.lineno, ast.unparse(a)) for a in _annotations(node))
    return [f"{module.__name__}:{line}: {text}" for line, text in texts if _ANY.search(text)]


@pytest.mark.parametrize("module", _WHOLE, ids=lambda m: m.__name__)
def test_the_chain_and_the_leaf_of_tool_info_hold_no_any(module: ModuleType) -> None:
    tree = ast.parse(inspect.getsource(module))
    assert _with_any(module, tree) == []
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names]
    assert "Any" not in imported


@pytest.mark.parametrize(("module", "qualname"), _ENTRIES, ids=lambda x: getattr(x, "__name__", x))
def test_each_step_of_the_decision_path_has_no_any_in_its_signature(
    module: ModuleType, qualname: str
) -> None:
    assert _with_any(module, _node(module, qualname)) == []


def _hint_parts(hint: object) -> Iterator[object]:
    yield hint
    for arg in typing.get_args(hint):
        yield from _hint_parts(arg)


def _resolved(obj: Callable[..., object], module: ModuleType) -> dict[str, object]:
    # The leaf's aliases resolve there (``JsonValue`` is recursive: it stays a forward reference).
    return typing.get_type_hints(obj, {**vars(info), **vars(module)})


@pytest.mark.parametrize(("module", "qualname"), _ENTRIES, ids=lambda x: getattr(x, "__name__", x))
def test_the_annotations_resolve_to_types_without_any(module: ModuleType, qualname: str) -> None:
    obj: object = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    assert callable(obj)
    hints = _resolved(obj, module)
    assert hints, qualname  # annotated
    found = [
        (name, part)
        for name, hint in hints.items()
        for part in _hint_parts(hint)
        if part is typing.Any or (isinstance(part, str | typing.ForwardRef) and _ANY.search(str(part)))
    ]
    assert found == []


@pytest.mark.parametrize(("module", "name"), _ALIASES, ids=lambda x: getattr(x, "__name__", x))
def test_the_aliases_of_the_decision_path_hold_no_any(module: ModuleType, name: str) -> None:
    alias = getattr(module, name)
    assert not any(part is typing.Any for part in _hint_parts(alias))
    assert not _ANY.search(repr(alias))


def test_tool_info_lives_in_the_leaf_the_hooks_the_chain_and_the_tool_import() -> None:
    assert info.ToolInfo.__module__ == "toolspan._instrument.info"
    for module in (hooks, chain, tool):
        assert module.ToolInfo is info.ToolInfo, module.__name__
    leaf = ast.parse(inspect.getsource(info))
    imported = {n.module for n in ast.walk(leaf) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m and m.startswith(("toolspan._decisions", "toolspan._approvals"))}
    assert not {"toolspan._instrument.hooks", "toolspan._instrument.tool"} & imported
    assert importlib.import_module("toolspan._instrument.info") is info
