"""The byte budget of a captured value: the one truncation marker, and fitting cut data into a budget.

Every cut says how much it left out, with the marker ``...[truncated`` (``N``: how much was cut):

- a string keeps a prefix and ends with ``"...[truncated N chars]"``;
- an array keeps its first items and ends with the element ``"...[truncated N items]"``;
- an object keeps its first entries and ends with the entry ``"...[truncated]": N`` (N keys cut);
- when structure alone cannot fit, the whole value becomes
  ``{"toolspan.truncated": true, "preview": "<start of the JSON text>...[truncated N chars]"}``.

The walker of ``serialize`` marks what it stopped early on with ``CutStr``/``CutList``/``CutDict``
(their ``omitted`` count); ``fit`` renders those marks and cuts further until the JSON text fits.
"""

from __future__ import annotations

import math
from typing import Any, Final

from toolspan import semconv
from toolspan._capture.encode import ENCODE, nbytes

__all__ = [
    "DICT_MARKER_KEY",
    "FALLBACK_KEY",
    "MARKER",
    "CutDict",
    "CutList",
    "CutStr",
    "cut_str",
    "fallback",
    "fit",
    "fit_text",
    "list_marker",
    "only_marker",
    "render",
    "str_marker",
]

MARKER: Final = semconv.TRUNCATION_MARKER
DICT_MARKER_KEY: Final = MARKER + "]"
FALLBACK_KEY: Final = semconv.TRUNCATION_FALLBACK_KEY


def str_marker(omitted: int) -> str:
    """The end of a string that lost its last ``omitted`` characters."""
    return f"{MARKER} {omitted} chars]"


def list_marker(omitted: int) -> str:
    """The last element of an array that lost ``omitted`` items."""
    return f"{MARKER} {omitted} items]"


class CutStr(str):
    omitted: int


class CutList(list[Any]):
    omitted: int


class CutDict(dict[str, Any]):
    omitted: int


def cut_str(text: str, omitted: int) -> CutStr:
    out = CutStr(text)
    out.omitted = omitted
    return out


def fit_text(text: str, budget: int) -> str:
    """Plain ``text`` within ``budget`` UTF-8 bytes; a cut text ends with the string marker."""
    if nbytes(text) <= budget:
        return text
    room = max(0, budget - len(str_marker(len(text))))  # the marker is ASCII; its count at most this long
    kept = text.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
    return kept + str_marker(len(text) - len(kept))


def render(node: Any) -> Any:
    """Plain JSON data with the cut markers written in."""
    if isinstance(node, str):
        omitted = getattr(node, "omitted", 0)
        return f"{node}{str_marker(omitted)}" if omitted else str.__str__(node)
    if isinstance(node, list):
        out = [render(item) for item in node]
        omitted = getattr(node, "omitted", 0)
        if omitted:
            out.append(list_marker(omitted))
        return out
    if isinstance(node, dict):
        out_dict = {key: render(item) for key, item in node.items()}
        omitted = getattr(node, "omitted", 0)
        if omitted:
            out_dict[DICT_MARKER_KEY] = omitted
        return out_dict
    return node


def _size(node: Any) -> int:
    return nbytes(ENCODE(node))


def fit(node: Any, limit: int) -> tuple[Any, int] | None:
    """``node`` rendered to at most ``limit`` bytes of JSON (cut and marked), or None if impossible."""
    if limit <= 0:
        return None
    full = render(node)
    size = _size(full)
    if size <= limit:
        return full, size
    if isinstance(node, str):
        return _fit_str(node, limit)
    if isinstance(node, list):
        return _fit_list(node, limit)
    if isinstance(node, dict):
        return _fit_dict(node, limit)
    return None


def _fit_str(node: str, limit: int) -> tuple[str, int] | None:
    prior = getattr(node, "omitted", 0)
    length = len(node)
    keep = min(length, limit)
    while True:
        omitted = prior + length - keep
        marker = str_marker(omitted) if omitted else ""
        text = node[:keep] + marker
        size = _size(text)
        if size <= limit:
            return text, size
        if keep == 0:
            return None
        per_char = max(1.0, (size - len(marker) - 2) / keep)  # bytes per kept char, roughly
        keep = max(0, keep - max(1, math.ceil((size - limit) / per_char)))


def _fit_list(node: list[Any], limit: int) -> tuple[list[Any], int] | None:
    prior = getattr(node, "omitted", 0)
    count = len(node)
    out: list[Any] = []
    used = 2
    for index, item in enumerate(node):
        sep = 2 if out else 0
        after = prior + count - index - 1  # items cut if we stop right after this one
        reserve = 2 + _size(list_marker(after)) if after else 0
        fitted = fit(item, limit - used - sep - reserve)
        if fitted is None:
            break
        out.append(fitted[0])
        used += sep + fitted[1]
    omitted = prior + count - len(out)
    if omitted:
        out.append(list_marker(omitted))
        used += (2 if len(out) > 1 else 0) + _size(out[-1])
    return (out, used) if used <= limit else None


def _fit_dict(node: dict[str, Any], limit: int) -> tuple[dict[str, Any], int] | None:
    prior = getattr(node, "omitted", 0)
    count = len(node)
    out: dict[str, Any] = {}
    used = 2
    marker_key = _size(DICT_MARKER_KEY) + 2
    for index, (key, item) in enumerate(node.items()):
        sep = 2 if out else 0
        after = prior + count - index - 1
        reserve = 2 + marker_key + len(str(after)) if after else 0
        key_size = _size(key) + 2
        fitted = fit(item, limit - used - sep - key_size - reserve)
        if fitted is None:
            break
        out[key] = fitted[0]
        used += sep + key_size + fitted[1]
    omitted = prior + count - len(out)
    if omitted:
        used += (2 if out else 0) + marker_key + len(str(omitted))
        out[DICT_MARKER_KEY] = omitted
    return (out, used) if used <= limit else None


def only_marker(tree: Any, out: Any) -> bool:
    """Whether a non-empty container was cut down to its marker alone (a preview says more)."""
    omitted: int = getattr(tree, "omitted", 0)
    if isinstance(tree, dict) and (tree or omitted):
        return isinstance(out, dict) and list(out) == [DICT_MARKER_KEY]
    if isinstance(tree, list) and (tree or omitted):
        return bool(out == [list_marker(len(tree) + omitted)])
    return False


def fallback(full_text: str, limit: int, cut_text: str | None) -> str:
    """The wrapper with a preview of ``full_text``; else ``cut_text`` (a marker-only cut) if any."""
    head = ENCODE({FALLBACK_KEY: True, "preview": ""})
    preview = _fit_str(full_text, limit - nbytes(head) + 2)  # +2: the preview's quotes are in both
    if preview is not None:
        return ENCODE({FALLBACK_KEY: True, "preview": preview[0]})
    if cut_text is not None:
        return cut_text
    head = ENCODE({FALLBACK_KEY: True})
    return head if nbytes(head) <= limit else "null"
