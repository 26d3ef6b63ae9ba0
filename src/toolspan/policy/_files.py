"""Policy files: JSON, or YAML with ``toolspan[policy]`` (``_yaml``), read into a ``Policy``.

A policy file is bounded: at most ``MAX_POLICY_BYTES`` bytes of UTF-8, nested at most ``MAX_DEPTH`` deep, with
no duplicate keys (JSON or YAML) and no YAML anchors, aliases or merge keys. Every problem is a
``PolicyError`` naming the file, the line where known, and the field.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

from toolspan.errors import PolicyError, ToolspanError
from toolspan.policy._model import Policy, brief, parse_policy
from toolspan.policy._yaml import load_yaml

__all__ = ["MAX_POLICY_BYTES", "load_policy"]

MAX_POLICY_BYTES: Final = 1 << 20  # a policy file larger than this is refused


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read a policy from a JSON or YAML file (YAML needs PyYAML: the ``policy`` extra)."""
    path = Path(path)
    name = str(path)
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_POLICY_BYTES + 1)
    except OSError as e:
        raise PolicyError(f"{name}: cannot read: {e.strerror or e}") from None
    if len(raw) > MAX_POLICY_BYTES:
        raise PolicyError(f"{name}: larger than {MAX_POLICY_BYTES} bytes; a policy is a small document")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PolicyError(f"{name}: not UTF-8 text (byte {e.start})") from None
    yaml = path.suffix.lower() in (".yaml", ".yml")
    return parse_policy(load_yaml(text, name) if yaml else _load_json(text, name), name)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _DuplicateKey(ToolspanError, ValueError):
    pass


def _load_json(text: str, name: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_unique)
    except json.JSONDecodeError as e:
        raise PolicyError(f"{name}:{e.lineno}: not valid JSON: {e.msg}") from None
    except _DuplicateKey as e:
        raise PolicyError(
            f"{name}: duplicate key {brief(str(e))} (a later value would hide the first)"
        ) from None
    except RecursionError:
        raise PolicyError(f"{name}: nested too deeply") from None
    except ValueError as e:  # a number too long to convert, ...
        raise PolicyError(f"{name}: not a usable JSON document: {brief(str(e), 200)}") from None
