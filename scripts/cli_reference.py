"""Write ``docs/cli.md``, the command line's reference, from the CLI's own argparse parser, so it cannot go
stale: every command, its usage, what it does, each argument with its default.

    .venv/bin/python scripts/cli_reference.py          # rewrite docs/cli.md (after a new command or flag)
    .venv/bin/python scripts/cli_reference.py --check  # exit 1 when docs/cli.md is not what the parser says

``tests/docs/test_cli_reference.py`` runs the check. The page is built from the parser's actions, not from
``--help``'s text (which wraps to the terminal and changes between Python versions).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "cli.md"

HEADER = """# Command line

Written from the CLI's own parser by `python scripts/cli_reference.py` (a test checks it is current);
`toolspan COMMAND --help` says the same in the terminal. Exit status: 0 done, 1 bad input (one line on
stderr naming file, line and field), no spans in the inputs or, for `audit`, a violation found, 2 bad
usage (the command's usage and the flag it most likely meant; a mistyped command, the one it most likely
meant).
"""


def _parser() -> argparse.ArgumentParser:
    from toolspan.cli import _main

    return _main._parser()


def _commands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """``(name, one-line help, parser)`` of each command, in the parser's order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            return [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return []


def _code(text: str) -> str:
    return "`" + text.replace("`", "'") + "`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _metavar(action: argparse.Action) -> str:
    if action.choices is not None and action.metavar is None:
        return "{" + ",".join(str(c) for c in action.choices) + "}"
    if action.metavar is not None:
        return str(action.metavar)
    return action.dest.upper()


def _argument(action: argparse.Action) -> str:
    """How the argument is written: ``--to {events,...}``, ``-o FILE, --output FILE``, ``INPUT ...``."""
    if not action.option_strings:
        name = _metavar(action)
        return f"{name} ..." if action.nargs in ("+", "*") else name
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    return ", ".join(f"{flag} {_metavar(action)}" for flag in action.option_strings)


def _default(action: argparse.Action) -> str:
    if not action.option_strings or action.nargs == 0:
        return ""
    if action.default in (None, [], (), argparse.SUPPRESS):
        return ""
    return _code(str(action.default))


def _usage(name: str, parser: argparse.ArgumentParser) -> str:
    parts = [f"toolspan {name}"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        written = _argument(action) if action.option_strings else _metavar(action)
        if action.option_strings:
            flag = next((f for f in action.option_strings if f.startswith("--")), action.option_strings[0])
            written = flag + ("" if action.nargs == 0 else f" {_metavar(action)}")
            required = bool(getattr(action, "required", False))
            parts.append(written if required else f"[{written}]")
        else:
            parts.append(f"{written} ..." if action.nargs in ("+", "*") else written)
    return textwrap.fill(" ".join(parts), width=100, subsequent_indent=" " * 4, break_on_hyphens=False)


def _command(name: str, parser: argparse.ArgumentParser) -> list[str]:
    lines = [f"## toolspan {name}", "", "```text", _usage(name, parser), "```", ""]
    description = (parser.description or "").strip()
    if description:
        lines += ["```text", description, "```", ""]
    lines += ["| argument | meaning | default |", "|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        required = " (required)" if getattr(action, "required", False) and action.option_strings else ""
        meaning = _cell((action.help or "") % {"default": action.default} if action.help else "")
        lines.append(f"| {_code(_argument(action))}{required} | {meaning} | {_default(action)} |")
    return [*lines, ""]


def render(parser: Any = None) -> str:
    """The whole page, from ``parser`` (the CLI's own by default)."""
    parser = parser or _parser()
    commands = _commands(parser)
    lines = [HEADER, "| command | what it does |", "|---|---|"]
    for name, help_text, _ in commands:
        lines.append(f"| [{_code('toolspan ' + name)}](#toolspan-{name}) | {_cell(help_text)} |")
    lines.append("")
    for name, _, sub in commands:
        lines += _command(name, sub)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when docs/cli.md is stale; write nothing"
    )
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != text:
            sys.stderr.write(f"{PAGE.relative_to(REPO)} is stale: run python scripts/cli_reference.py\n")
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    sys.stdout.write(f"wrote {PAGE.relative_to(REPO)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
