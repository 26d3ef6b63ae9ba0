"""What an install brings, and what a file imports: for the tests that the README's set-up and the
``examples`` extra install everything the Quickstart and the examples need."""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

__all__ = ["distribution", "import_groups", "installed_by", "third_party"]


def import_groups(path: Path) -> list[set[str]]:
    """The modules ``path`` imports, as groups of alternatives: a ``try: import a`` / ``except ImportError:
    import b`` is one group (either will do); every other import is a group of one."""
    tree = ast.parse(path.read_text("utf-8"))
    groups: list[set[str]] = []
    guarded: set[int] = set()

    def names(nodes: list[ast.stmt]) -> set[str]:
        found = set()
        for node in nodes:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Import):
                    found |= {alias.name for alias in sub.names}
                    guarded.add(id(sub))
                elif isinstance(sub, ast.ImportFrom) and sub.level == 0 and sub.module:
                    # ``from google import genai`` imports the module google.genai
                    found |= {f"{sub.module}.{alias.name}" for alias in sub.names}
                    guarded.add(id(sub))
        return found

    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
            for h in node.handlers
        ):
            groups.append(names(node.body) | names([s for h in node.handlers for s in h.body]))
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            groups += [{alias.name} for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            groups += [{f"{node.module}.{alias.name}"} for alias in node.names]
    return groups


def third_party(module: str, local: set[str]) -> bool:
    """Whether ``module`` comes from another distribution: not the standard library, not toolspan, not
    one of the ``local`` modules beside the importing file."""
    top = module.split(".", maxsplit=1)[0]
    return top not in sys.stdlib_module_names and top not in local and top not in ("toolspan", "__future__")


@functools.cache
def _top_level() -> dict[str, list[str]]:
    return dict(metadata.packages_distributions())


@functools.cache
def distribution(module: str) -> str | None:
    """The distribution that provides ``module`` (or the package of ``from package import name``)."""
    top = module.split(".", maxsplit=1)[0]
    candidates = _top_level().get(top, [])
    if len(set(candidates)) <= 1:
        return candidates[0].lower() if candidates else None
    spec = None
    for name in (module, module.rpartition(".")[0]):  # a namespace package: whose files hold it
        try:
            spec = importlib.util.find_spec(name) if name else None
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin not in (None, "namespace"):
            break
    if spec is None or spec.origin in (None, "namespace"):
        return None
    target = Path(spec.origin).resolve()
    for name in sorted(set(candidates)):
        dist = metadata.distribution(name)
        if any(Path(str(dist.locate_file(f))).resolve() == target for f in dist.files or ()):
            return name.lower()
    return None


def installed_by(extras: set[str]) -> set[str]:
    """Every distribution ``pip install ".[extras]"`` brings in: toolspan's requirements for those extras,
    and theirs, markers evaluated here (``extra`` set along the way)."""

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    seen: set[str] = set()
    todo: list[tuple[str, set[str]]] = [("toolspan", extras)]
    while todo:
        name, wanted = todo.pop()
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for line in requires:
            req = Requirement(line)
            envs = [{"extra": e} for e in wanted] or [{"extra": ""}]
            if req.marker is not None and not any(req.marker.evaluate(env) for env in envs):
                continue
            key = (norm(req.name), frozenset(req.extras))
            if f"{key[0]}[{','.join(sorted(key[1]))}]" in seen:
                continue
            seen.add(f"{key[0]}[{','.join(sorted(key[1]))}]")
            todo.append((req.name, set(req.extras)))
    return {entry.split("[")[0] for entry in seen}
