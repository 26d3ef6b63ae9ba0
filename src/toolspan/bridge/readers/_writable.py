"""What the readers put in a span: values every view can write as strict UTF-8 JSON.

A trace file can hold text no UTF-8 can encode: a lone surrogate, from JSON's ``"\\ud800"`` escape (or the
bytes ``ED A0 80``, which ``json.loads`` reads with ``surrogatepass``), in a span's name, a tool's name or
result, a status message, any attribute or key. The readers write each one as the text of its escape
(``\\ud800``, six characters, as ``toolspan audit`` and the server's JSON answers write it), so nothing of it
is lost and no view meets text it cannot write. An in-process span can also hold an integer too long for
decimal text (over ``sys.get_int_max_str_digits``): it becomes its hex text (``0x...``, the writer's
``writable_int``), as the capture of a tool's arguments writes it.

The JSON readers check the text they parse (``may_hold_surrogates``, one scan that finds nothing in almost
every file) and mend only a document that may hold one (``writable_document``, in place, iterative: any
depth).
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = [
    "escaped",
    "may_hold_surrogates",
    "writable_copy",
    "writable_document",
    "writable_text",
]

_LONE: Final = re.compile("[\ud800-\udfff]")
_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")
_ESCAPE_BYTES: Final = re.compile(rb"\\u[dD][89a-fA-F]")
# A surrogate's bytes as ``surrogatepass`` reads them (``ED A0 80`` to ``ED BF BF``).
_LONE_BYTES: Final = re.compile(rb"\xed[\xa0-\xbf]")


def escaped(text: str) -> str:
    """``text`` with every lone surrogate written as the text of its escape (``\\ud800``)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def writable_text(text: str) -> str:
    """``text`` as it is, or ``escaped`` when it holds a lone surrogate."""
    if text.isascii() or _LONE.search(text) is None:
        return text
    return escaped(text)


def may_hold_surrogates(text: str | bytes) -> bool:
    """Whether JSON ``text`` (or its UTF-8 bytes) may decode to a lone surrogate: a surrogate escape, or one
    raw in the text (a pair's escapes too, which decode to one character: ``writable_document`` then changes
    nothing)."""
    if isinstance(text, str):
        if "\\u" in text and _ESCAPE.search(text) is not None:
            return True
        return not text.isascii() and _LONE.search(text) is not None
    if b"\\u" in text and _ESCAPE_BYTES.search(text) is not None:
        return True
    return b"\xed" in text and _LONE_BYTES.search(text) is not None


def _needs(text: str) -> bool:
    return not text.isascii() and _LONE.search(text) is not None


def _mend_dict(item: dict[Any, Any], stack: list[Any]) -> None:
    if any(type(key) is str and _needs(key) for key in item):
        pairs = list(item.items())
        item.clear()
        for key, value in pairs:  # the order kept; a key escaped onto another's text: the later wins
            item[writable_text(key) if type(key) is str else key] = value
    for key, value in item.items():
        if type(value) is str:
            if _needs(value):
                item[key] = escaped(value)
        elif type(value) in (dict, list):
            stack.append(value)


def writable_document(doc: Any) -> Any:
    """``doc`` (parsed JSON, changed in place) with every lone surrogate of its strings and keys escaped."""
    if type(doc) is str:
        return writable_text(doc)
    stack = [doc]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            _mend_dict(item, stack)
        elif type(item) is list:
            for at, value in enumerate(item):
                if type(value) is str:
                    if _needs(value):
                        item[at] = escaped(value)
                elif type(value) in (dict, list):
                    stack.append(value)
    return doc


def _holds_lone(doc: Any) -> bool:
    stack = [doc]
    while stack:
        item = stack.pop()
        if type(item) is str:
            if _needs(item):
                return True
        elif isinstance(item, dict):
            if any(type(key) is str and _needs(key) for key in item):
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _copy(doc: Any) -> Any:
    """A copy of ``doc``'s dicts and lists, at any depth (iterative)."""
    root = [doc]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        holder, key = stack.pop()
        item = holder[key]
        if isinstance(item, dict):
            copied: Any = dict(item)
            stack.extend((copied, k) for k in copied)
        elif isinstance(item, list):
            copied = list(item)
            stack.extend((copied, n) for n in range(len(copied)))
        else:
            continue
        holder[key] = copied
    return root[0]


def writable_copy(doc: Any) -> Any:
    """``doc`` (a caller's parsed JSON) as it is when it holds no lone surrogate, else a copy with each one
    escaped: the caller's document is never changed."""
    return writable_document(_copy(doc)) if _holds_lone(doc) else doc
