"""How the CLI's ``--help`` reads: descriptions as written (their line breaks kept) without the reST markup
of the docstrings they come from, and each option's default after its help when it has a meaningful one."""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Sequence
from typing import Any, Final

__all__ = ["CommandParser", "HelpFormatter", "ToolspanParser", "plain"]

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


class CommandParser(argparse.ArgumentParser):
    """The parser of one command (``toolspan convert``...): an argument it does not know is its own error,
    shown with its own usage and the flag it most likely meant. (argparse leaves a command's unknown
    arguments to the top-level parser, whose usage names none of the command's flags.)"""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        unknown = self._unknown_flags(list(args or []))
        if unknown:  # before a missing required argument is reported: the misspelling is the cause
            self.error(f"unrecognized arguments: {' '.join(unknown)}{self._suggestion(unknown)}")
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}{self._suggestion(extras)}")
        return parsed, extras

    def _flags(self) -> list[str]:
        return [s for action in self._actions for s in action.option_strings]

    def _unknown_flags(self, args: list[str]) -> list[str]:
        known = set(self._flags())
        found = []
        for arg in args:
            if arg == "--":
                break
            name = arg.split("=", 1)[0]
            # Not a flag of this command, nor the abbreviation of one.
            if name.startswith("--") and len(name) > 2 and not any(f.startswith(name) for f in known):
                found.append(arg)
        return found

    def _suggestion(self, extras: list[str]) -> str:
        flags = [s for s in self._flags() if s.startswith("--")]
        for extra in extras:
            if extra.startswith("-"):
                close = difflib.get_close_matches(extra.split("=", 1)[0], flags, n=1, cutoff=0.6)
                if close:
                    return f" (did you mean {close[0]}?)"
        return ""

    def error(self, message: str) -> Any:  # the command's usage, then one line
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


class ToolspanParser(argparse.ArgumentParser):
    """The ``toolspan`` parser: a command it does not know is refused with the command it most likely meant
    (``toolspan convrt`` -> did you mean convert?). Its own options take no value, so the first argument
    that is not one is the command."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        given = list(sys.argv[1:] if args is None else args)
        commands = self._commands()
        command = next((arg for arg in given if not arg.startswith("-")), None)
        if command is not None and commands and command not in commands:
            close = difflib.get_close_matches(command, commands, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]}?)" if close else ""
            self.error(f"unknown command {command!r}{hint}; the commands are {', '.join(commands)}")
        return super().parse_known_args(given, namespace)

    def _commands(self) -> list[str]:
        for action in self._actions:
            if not action.option_strings and isinstance(action.choices, dict):  # the commands' sub-parsers
                return list(action.choices)
        return []
