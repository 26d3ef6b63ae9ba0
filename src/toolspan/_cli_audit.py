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
from typing import IO, Any

from toolspan._cli_help import HelpFormatter, plain

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Register the ``audit`` subcommand on an ``argparse`` subparsers object."""
    parser = sub.add_parser(
        "audit",
        help="check the tool calls of recorded runs against a policy (exit 1 on a violation)",
        description=plain(__doc__),
        formatter_class=HelpFormatter,
    )
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="file, directory, glob, or - for stdin")
    parser.add_argument("--policy", required=True, metavar="FILE", help="policy file (JSON or YAML)")
    parser.add_argument(
        "--to",
        "--format",
        dest="format",
        choices=("text", "json", "html"),
        default="text",
        help="report format (html: the trace page with the violations marked; --format is its old name)",
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report here instead of stdout")
    parser.add_argument("--lenient", action="store_true", help="skip bad records (counted on stderr)")
    parser.add_argument("--strict", action="store_true", help="a rule that could not be checked fails too")
    parser.add_argument("--indent", type=int, default=None, help="indent the JSON report")


def _line(kind: str, f: dict[str, Any]) -> str:
    agent = f" agent={f['agent']}" if f["agent"] else ""
    return (
        f"{kind} {f['rule_id']}: trace={f['trace_id']} span={f['span_id']} exec={f['execution_id']}"
        f" tool={f['tool_name']}{agent}: {f['reason']}\n"
    )


def _text(report: dict[str, Any]) -> str:
    out = [_line("VIOLATION", f) for f in report["violations"]]
    out += [_line("DENIED", f) for f in report["enforced"]]
    out += [_line("UNCHECKED", f) for f in report["unchecked"]]
    s = report["summary"]
    p = report["policy"]
    out.append(
        f"policy {p['id']} version {p['version']}: {s['tool_calls']} tool call(s) in {s['traces']} trace(s):"
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
    if args.format == "html":
        pages = mark_pages(to_pages(spans), result)
        out.write(render_html(pages).encode("utf-8"))
        err.write("toolspan: " + _text({**result, "violations": [], "enforced": [], "unchecked": []}))
    elif args.format == "json":
        out.write((json.dumps(result, ensure_ascii=False, indent=args.indent) + "\n").encode("utf-8"))
    else:
        out.write(_text(result).encode("utf-8"))
    out.flush()
    summary = result["summary"]
    return 1 if summary["violations"] or (args.strict and summary["unchecked"]) else 0
