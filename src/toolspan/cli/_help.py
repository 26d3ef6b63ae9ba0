"""How the CLI's ``--help`` reads: descriptions as written (their line breaks kept) without the reST markup
of the docstrings they come from, and each option's default after its help when it has a meaningful one."""

from __future__ import annotations

import argparse
import re
from typing import Final

__all__ = ["HelpFormatter", "plain"]

_ROLE: Final = re.compile(r":[a-z]+:`([^`]*)`")  # :func:`name` -> name


def plain(text: str | None) -> str | None:
    """``text`` without reST inline markup: ``code`` and :role:`name` become code and name."""
    if text is None:
        return None
    return _ROLE.sub(r"\1", text).replace("``", "")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Raw descriptions; ``(default: X)`` after an option's help unless its default says nothing (none,
    off, empty) or the help already states it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help
        if text is None or "%(default)" in text or "default" in text or not action.option_strings:
            return text
        if action.default in (None, False, [], (), argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"
