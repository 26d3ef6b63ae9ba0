"""Each command's arguments as one table (a tuple of ``Option``), added to its parser by ``add_options``: what
the parser takes, what ``--help`` shows and what ``docs/cli.md`` (``scripts/cli_reference.py``) lists come
from the same rows, and ``toolspan serve`` builds its configuration from them (``Option.field``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Option", "add_options"]


@dataclass(frozen=True, slots=True)
class Option:
    """One argument of a command: its flags (``("-o", "--output")``; a positional's name alone), its help,
    and how it is read. ``action``: ``"append"`` repeats it (default ``[]``), ``"store_true"`` makes it a
    switch. Options of one ``group`` exclude each other. ``field``: the configuration field it sets
    (``toolspan serve``: ``ServerConfig``)."""

    flags: tuple[str, ...]
    help: str
    type: Callable[[str], Any] | None = None
    default: Any = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    required: bool = False
    action: Literal["append", "store_true"] | None = None
    nargs: Literal["+"] | None = None
    dest: str | None = None
    group: str | None = None
    field: str | None = None

    @property
    def name(self) -> str:
        """The attribute of the parsed arguments that holds it."""
        if self.dest is not None:
            return self.dest
        flag = next((f for f in self.flags if f.startswith("--")), self.flags[0])
        return flag.lstrip("-").replace("-", "_")

    def add_to(self, parser: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup) -> None:
        """Add this argument to ``parser`` (or to one of its groups)."""
        given: dict[str, Any] = {
            "type": self.type,
            "metavar": self.metavar,
            "choices": self.choices,
            "action": self.action,
            "nargs": self.nargs,
            "dest": self.dest,
        }
        kwargs = {key: value for key, value in given.items() if value is not None}
        if self.flags[0].startswith("-"):
            if self.required:
                kwargs["required"] = True
            if self.action != "store_true":
                kwargs["default"] = [] if self.action == "append" else self.default
        parser.add_argument(*self.flags, help=self.help, **kwargs)


def add_options(
    parser: argparse.ArgumentParser, options: Iterable[Option], required_groups: Iterable[str] = ()
) -> None:
    """Add ``options`` to ``parser`` in their order; each ``group`` becomes one mutually exclusive group
    (one of them is required for the groups in ``required_groups``)."""
    required = set(required_groups)
    groups: dict[str, argparse._MutuallyExclusiveGroup] = {}
    for option in options:
        if option.group is None:
            option.add_to(parser)
            continue
        group = groups.get(option.group)
        if group is None:
            group = groups[option.group] = parser.add_mutually_exclusive_group(
                required=option.group in required
            )
        option.add_to(group)
