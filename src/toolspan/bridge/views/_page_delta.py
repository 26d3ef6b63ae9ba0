"""What changed between two page documents of one trace (``page_delta``), and the change applied
(``apply_page_delta``): what ``toolspan serve``'s live page stream sends instead of the whole document on each
commit of a trace (schema ``page-delta``).

A step is named by its **key**, never by its position: its span id, or, for the n-th record of a span id the
trace holds more than once (a ``duplicate``), ``<span id>#<n>`` (n from 2). Inside a delta, a step's
``parent`` and a conversation item's ``step`` are keys too (a document holds indexes: they shift whenever a
step is inserted before them). A delta:

- ``schema_version``, ``trace_id``;
- ``set``: the document's own fields that changed (``title``, ``start_time``, ``start_ms``, ``duration_us``,
  ``live``, ``conversation_id``, ``counts``, ...), each with its new value;
- ``added``: the new steps, in the new document's order: ``{key, after, step}``, ``after`` the key of the step
  just before it in the new document (``null``: first), ``step`` the whole step (``parent`` a key);
- ``changed``: ``{key, set, unset}`` per step still there that changed: its fields with a new value (a flag
  that moved, ``critical``, ``duplicate``, a state, an end, ...) and the fields it no longer has;
- ``removed``: the keys of the steps gone (a pending record merged with its end keeps its key);
- ``order``: only when the steps kept are no longer in their old order: every key, in the new order;
- ``conversation``: only when it changed: ``{keep, items}``, the first ``keep`` items stay, ``items`` follow;
- ``page``: only when keys cannot name the steps (two records would share a key): the whole new document,
  and nothing else applies.

``apply_page_delta(old, page_delta(old, new)) == new`` for any two documents of one trace.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

from toolspan.bridge.views._common import SCHEMA_VERSION

__all__ = ["apply_page_delta", "page_delta", "step_keys"]

_OWN: Final = frozenset({"steps", "conversation"})


def step_keys(steps: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each step's key: its span id, ``<span id>#<n>`` for the n-th record of that id (n >= 2)."""
    seen: dict[str, int] = {}
    keys: list[str] = []
    for step in steps:
        n = seen.get(step["id"], 0) + 1
        seen[step["id"]] = n
        keys.append(step["id"] if n == 1 else f"{step['id']}#{n}")
    return keys


def _keyed(steps: Sequence[Mapping[str, Any]], keys: list[str]) -> dict[str, dict[str, Any]]:
    """The steps by key, each with ``parent`` as the parent's key."""
    out: dict[str, dict[str, Any]] = {}
    for step, key in zip(steps, keys, strict=True):
        parent = step["parent"]
        out[key] = {**step, "parent": None if parent is None else keys[parent]}
    return out


def _items(conversation: Sequence[Mapping[str, Any]], keys: list[str]) -> list[dict[str, Any]]:
    """The conversation's items, each ``step`` as a key."""
    return [
        {**item, "step": None if item["step"] is None else keys[item["step"]]}
        if "step" in item
        else dict(item)
        for item in conversation
    ]


def page_delta(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """What changed from page document ``old`` to ``new`` of the same trace (module doc)."""
    delta: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "trace_id": new["trace_id"]}
    old_keys, new_keys = step_keys(old["steps"]), step_keys(new["steps"])
    if len(set(old_keys)) != len(old_keys) or len(set(new_keys)) != len(new_keys):
        delta["page"] = copy.deepcopy(dict(new))
        return delta
    delta["set"] = {
        k: copy.deepcopy(v) for k, v in new.items() if k not in _OWN and (k not in old or old[k] != v)
    }
    gone = [k for k in old if k not in _OWN and k not in new]
    if gone:
        delta["unset"] = gone
    before, after = _keyed(old["steps"], old_keys), _keyed(new["steps"], new_keys)
    added: list[dict[str, Any]] = []
    changed: list[dict[str, Any]] = []
    for i, key in enumerate(new_keys):
        step = after[key]
        was = before.get(key)
        if was is None:
            added.append({"key": key, "after": new_keys[i - 1] if i else None, "step": copy.deepcopy(step)})
        elif was != step:
            changed.append(
                {
                    "key": key,
                    "set": {f: copy.deepcopy(v) for f, v in step.items() if f not in was or was[f] != v},
                    "unset": [f for f in was if f not in step],
                }
            )
    delta["added"] = added
    delta["changed"] = changed
    delta["removed"] = [k for k in old_keys if k not in after]
    kept_then = [k for k in old_keys if k in after]
    kept_now = [k for k in new_keys if k in before]
    if kept_then != kept_now:
        delta["order"] = new_keys
    then_items, now_items = _items(old["conversation"], old_keys), _items(new["conversation"], new_keys)
    if then_items != now_items:
        keep = 0
        while keep < min(len(then_items), len(now_items)) and then_items[keep] == now_items[keep]:
            keep += 1
        delta["conversation"] = {"keep": keep, "items": copy.deepcopy(now_items[keep:])}
    return delta


def _order(old_keys: list[str], delta: Mapping[str, Any]) -> list[str]:
    if "order" in delta:
        return list(delta["order"])
    removed = set(delta["removed"])
    follows: dict[str | None, str] = {a["after"]: a["key"] for a in delta["added"]}
    out: list[str] = []

    def chain(key: str | None) -> None:
        while key in follows:
            key = follows.pop(key)
            out.append(key)

    chain(None)
    for key in old_keys:
        if key not in removed:
            out.append(key)
            chain(key)
    return out


def apply_page_delta(old: Mapping[str, Any], delta: Mapping[str, Any]) -> dict[str, Any]:
    """The document ``page_delta(old, new)`` describes: ``new`` (``old`` is left as it is)."""
    if "page" in delta:
        return copy.deepcopy(dict(delta["page"]))
    old_keys = step_keys(old["steps"])
    steps = _keyed(old["steps"], old_keys)
    for key in delta["removed"]:
        del steps[key]
    for change in delta["changed"]:
        step = dict(steps[change["key"]])
        for field in change["unset"]:
            step.pop(field, None)
        step.update(copy.deepcopy(change["set"]))
        steps[change["key"]] = step
    for added in delta["added"]:
        steps[added["key"]] = copy.deepcopy(added["step"])
    keys = _order(old_keys, delta)
    position = {key: i for i, key in enumerate(keys)}
    out: dict[str, Any] = {k: copy.deepcopy(v) for k, v in old.items() if k not in _OWN}
    for field in delta.get("unset", ()):
        out.pop(field, None)
    out.update(copy.deepcopy(delta["set"]))
    out["steps"] = [
        {**steps[k], "parent": None if steps[k]["parent"] is None else position[steps[k]["parent"]]}
        for k in keys
    ]
    conversation = copy.deepcopy(old["conversation"])
    if "conversation" in delta:
        change = delta["conversation"]
        conversation = conversation[: change["keep"]] + [
            {**item, "step": None if item["step"] is None else position[item["step"]]}
            if "step" in item
            else dict(item)
            for item in copy.deepcopy(change["items"])
        ]
    out["conversation"] = conversation
    return out
