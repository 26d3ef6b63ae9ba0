"""``toolspan audit INPUT... --policy FILE [--to text|json|html] [-o FILE] [--lenient] [--strict]``.

Checks every tool call of the recorded runs in INPUT (any format ``toolspan convert`` reads) against a policy
file (JSON, or YAML with ``toolspan[policy]``). Text output: one line per violation, then a summary; JSON
output: the audit report (violations, denied calls, unchecked rules, and the execution trees with each
offending tool node marked). HTML output: the self-contained trace page of the runs with every finding
marked on its tool node and a list of the violations that jumps to them (the summary line goes to stderr).
Exit status: 0 when nothing is violated, 1 when a rule is violated (or, with
``--strict``, when a rule could not be checked), 2 on bad usage, an unusable policy or unreadable input.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import IO, Any, Final

from toolspan.cli._help import HelpFormatter, plain
from toolspan.cli._options import Option, add_options

__all__ = ["add_parser", "run"]


OPTIONS: tuple[Option, ...] = (
    Option(("inputs",), "file, directory, glob, or - for stdin", metavar="INPUT", nargs="+"),
    Option(("--policy",), "policy file (JSON or YAML)", metavar="FILE", required=True),
    Option(
        ("--to", "--format"),
        "report format (html: the trace page with the violations marked; --format is its old name)",
        default="text",
        choices=("text", "json", "html"),
        dest="format",
    ),
    Option(("-o", "--output"), "write the report here instead of stdout", metavar="FILE"),
    Option(("--lenient",), "skip bad records (counted on stderr)", action="store_true"),
    Option(("--strict",), "a rule that could not be checked fails too", action="store_true"),
    Option(("--indent",), "indent the JSON report", int),
)


def add_parser(sub: Any) -> None:
    """Register the ``audit`` subcommand on an ``argparse`` subparsers object."""
    parser = sub.add_parser(
        "audit",
        help="check the tool calls of recorded runs against a policy (exit 1 on a violation)",
        description=plain(__doc__),
        formatter_class=HelpFormatter,
    )
    add_options(parser, OPTIONS)


# Every character that could end or forge a report line, or not be written at all, as an escape: C0 and C1
# controls, DEL, the Unicode line and paragraph separators, lone surrogates; and the backslash itself, so an
# escape in the report always means one.
_ESCAPES: Final = {
    **{c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))},
    **{c: f"\\u{c:04x}" for c in (0x2028, 0x2029, *range(0xD800, 0xE000))},
    ord("\\"): "\\\\",
}


def _field(value: Any) -> str:
    """One field of a text report line: never a line break, a control character or a lone surrogate."""
    return str(value).translate(_ESCAPES)


def _line(kind: str, f: dict[str, Any]) -> str:
    agent = f" agent={_field(f['agent'])}" if f["agent"] else ""
    return (
        f"{kind} {_field(f['rule_id'])}: trace={_field(f['trace_id'])} span={_field(f['span_id'])}"
        f" exec={_field(f['execution_id'])} tool={_field(f['tool_name'])}{agent}: {_field(f['reason'])}\n"
    )


def _text(report: dict[str, Any]) -> str:
    out = [_line("VIOLATION", f) for f in report["violations"]]
    out += [_line("DENIED", f) for f in report["enforced"]]
    out += [_line("UNCHECKED", f) for f in report["unchecked"]]
    s = report["summary"]
    p = report["policy"]
    out.append(
        f"policy {_field(p['id'])} version {_field(p['version'])}:"
        f" {s['tool_calls']} tool call(s) in {s['traces']} trace(s):"
        f" {s['violations']} violation(s), {s['enforced']} denied, {s['unchecked']} unchecked\n"
    )
    return "".join(out)


def run(args: argparse.Namespace, out: IO[bytes], err: IO[str], paths: list[Path | str]) -> int:
    """Run ``toolspan audit`` on the resolved input ``paths``; returns the exit status."""
    from toolspan.bridge.readers import BridgeReadError, ReadReport, iter_spans
    from toolspan.bridge.views import audit, mark_pages, to_pages
    from toolspan.page import render_html
    from toolspan.policy import PolicyError, load_policy

    try:
        policy = load_policy(args.policy)
    except PolicyError as e:
        err.write(f"toolspan: error: {e}\n")
        return 2
    report = ReadReport()
    try:
        spans = list(iter_spans(paths, lenient=args.lenient, report=report))
    except BridgeReadError as e:
        err.write(f"toolspan: error: {e}\n")
        return 2
    for issue in report.issues:
        err.write(f"toolspan: {'skipped' if args.lenient and issue.skipped else 'warning'}: {issue}\n")
    result = audit(spans, policy)
    # A lone surrogate (a hostile trace's name) is written as its JSON escape: valid in JSON strings,
    # plain text in HTML, never a crash.
    if args.format == "html":
        pages = mark_pages(to_pages(spans), result)
        out.write(render_html(pages).encode("utf-8", "backslashreplace"))
        err.write("toolspan: " + _text({**result, "violations": [], "enforced": [], "unchecked": []}))
    elif args.format == "json":
        text = json.dumps(result, ensure_ascii=False, indent=args.indent) + "\n"
        out.write(text.encode("utf-8", "backslashreplace"))
    else:
        out.write(_text(result).encode("utf-8", "backslashreplace"))
    out.flush()
    summary = result["summary"]
    return 1 if summary["violations"] or (args.strict and summary["unchecked"]) else 0
