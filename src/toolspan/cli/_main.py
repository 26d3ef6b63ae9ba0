"""``toolspan convert INPUT... --to events|timeline|tree|plans|progress|ag-ui|ai-sdk|html [-o FILE]``.

Reads spans from files, directories, globs or stdin (``-``) in any format the bridge reads, renders them
with a view and writes JSON: JSON Lines for the event streams (``events``, ``progress``, ``ag-ui``,
``ai-sdk``), one JSON document otherwise (``timeline``: an array of conversation documents; ``tree``: the
trace document, or an array of them for several traces; ``plans``: one object). ``html``: the
self-contained trace page, one file for all traces of the input (a trace picker when there are several).

``--to events`` streams: each span is turned into its events in input order, without holding the spans
in memory, each tool call linked to the model call that asked for it (a bounded per-trace index of model
requests, read up to 1024 spans ahead: a file may hold a tool span before its model call); ``--sorted``
buffers and orders them by time like ``to_events``, with the same links.
``-o FILE`` is written to a temporary file beside FILE and renamed over it only on success: a failed
run leaves FILE as it was. An output that is also an input is refused; an output inside an input
directory is not read, nor is any file toolspan wrote there before (its first key is ``schema_version``),
so ``toolspan convert .`` reads only the traces of the current directory. Output is always strict JSON
(non-finite numbers as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``).
Exit status: 0 on success, 1 on bad input or no spans in it (one line on stderr), 2 on bad usage (also an
output that is an input).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from importlib import metadata
from pathlib import Path
from typing import IO, Any

from toolspan.bridge import dumps_document, write_json_lines
from toolspan.bridge.internal import resolve_inputs
from toolspan.bridge.model import Span
from toolspan.bridge.readers import BridgeReadError, ReadReport, iter_spans
from toolspan.bridge.views.registry import VIEWS
from toolspan.cli import _audit as _cli_audit
from toolspan.cli import _output as _outputs
from toolspan.cli import _remote as _cli_remote
from toolspan.cli import _serve as _cli_serve
from toolspan.cli._help import CommandParser, HelpFormatter, ToolspanParser, plain
from toolspan.cli._options import Option, add_options

TARGETS = tuple(VIEWS)
_PROGRESS_MIN_BYTES = 8 << 20  # show the bar (on a TTY) only for inputs at least this big
_MAX_ISSUES_SHOWN = 10
# Ended tool spans remembered by the streaming events path (an open record arriving after its completion).
_MAX_ENDED = 4096


class _Bar:
    """A one-line progress bar on stderr: bytes read of the total, and spans read."""

    def __init__(self, total: int, report: ReadReport, stream: IO[str]) -> None:
        self.total = total
        self.done = 0
        self.report = report
        self.stream = stream
        self.last = 0.0

    def __call__(self, nbytes: int) -> None:
        self.done += nbytes
        now = time.monotonic()
        if now - self.last >= 0.2:
            self.last = now
            self.draw()

    def draw(self) -> None:
        spans = f"{self.report.spans_read:,} spans"
        if self.total > 0:
            frac = min(1.0, self.done / self.total)
            filled = int(frac * 30)
            bar = "#" * filled + "." * (30 - filled)
            line = f"\r[{bar}] {frac * 100:5.1f}%  {self.done / 1e6:,.1f}/{self.total / 1e6:,.1f} MB  {spans}"
        else:
            line = f"\r{self.done / 1e6:,.1f} MB  {spans}"
        self.stream.write(line)
        self.stream.flush()

    def close(self) -> None:
        self.draw()
        self.stream.write("\n")
        self.stream.flush()


def _version() -> str:
    try:
        return metadata.version("toolspan")
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    parser = ToolspanParser(
        prog="toolspan",
        description="Agent tool calls as OpenTelemetry spans, and those spans back as the views agent\n"
        "frontends draw. 'toolspan COMMAND --help' describes each command.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"toolspan {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    _add_convert(sub)
    _cli_audit.add_parser(sub)
    _cli_remote.add_parsers(sub, TARGETS)
    _cli_serve.add_parser(sub)
    return parser


CONVERT_OPTIONS: tuple[Option, ...] = (
    Option(("inputs",), "file, directory, glob, or - for stdin", metavar="INPUT", nargs="+"),
    Option(
        ("--to",),
        "output format: " + ", ".join(f"{v.name} ({v.title})" for v in VIEWS.values()),
        choices=TARGETS,
        required=True,
    ),
    Option(("-o", "--output"), "write here instead of stdout", metavar="FILE"),
    Option(("--lenient",), "skip bad records (counted on stderr)", action="store_true"),
    Option(("--sorted",), "events: buffer and order by time", action="store_true"),
    Option(("--progress",), "show a progress bar on stderr", action="store_true"),
    Option(("--indent",), "indent JSON documents (not JSON Lines)", int),
    Option(("--logs",), "OTLP logs joined to the spans (repeatable)", metavar="FILE", action="append"),
)


def _add_convert(sub: Any) -> None:
    convert = sub.add_parser(
        "convert",
        help="convert spans (OTLP JSON/protobuf, Jaeger, Tempo, ...) into a frontend format",
        description=plain(__doc__),
        formatter_class=HelpFormatter,
    )
    add_options(convert, CONVERT_OPTIONS)


def _events_stream(spans: Iterator[Span]) -> Iterator[dict[str, Any]]:
    """Act and observe events, span by span; an open act record and its completion give one act, in
    either order (a pending record exported at tool start may be written after the ended span)."""
    from toolspan.bridge.link import link_stream
    from toolspan.bridge.views import act_event, observe_event

    # Each tool call linked to the model call that asked for it, from a bounded per-trace index of the
    # model requests read so far (a model call ends before the tools it asked for start; a file may hold
    # it a little later than its tools: the stream reads a bounded number of spans ahead).
    open_acts: set[tuple[str, str]] = set()
    # The tool spans that ended, the latest ones only: memory stays bounded on a file of any size.
    ended: OrderedDict[tuple[str, str], None] = OrderedDict()
    for span, call in link_stream(spans):
        if call is None:
            continue
        if span.end_ns is None:
            key = (span.trace_id, span.span_id)
            if key not in open_acts and key not in ended:
                open_acts.add(key)
                yield act_event(span, call)
            continue
        key = (span.trace_id, span.span_id)
        ended[key] = None
        if len(ended) > _MAX_ENDED:
            ended.popitem(last=False)
        if open_acts and key in open_acts:
            open_acts.discard(key)
        else:
            yield act_event(span, call)
        yield observe_event(span, call)


def _render(target: str, spans: Iterator[Span], sort_events: bool) -> tuple[Iterator[Any] | None, Any]:
    """``(json_lines_items, None)`` for streams, ``(None, document)`` otherwise (the view registry's
    ``build``; the trace page rendered to HTML). Unsorted events stream span by span."""
    view = VIEWS[target]
    if target == "events" and not sort_events:
        return _events_stream(spans), None
    built = view.build(list(spans))
    if view.lines:
        return iter(built), None
    if view.media == "html":
        from toolspan.page import render_html

        return None, render_html(built)
    return None, built


def _write_lines(items: Iterator[Any], out: IO[bytes]) -> int:
    return write_json_lines(items, out)


def _report_issues(report: ReadReport, lenient: bool, err: IO[str]) -> None:
    for shown, issue in enumerate(report.issues):
        if shown >= _MAX_ISSUES_SHOWN:
            err.write(f"toolspan: ... and {len(report.issues) - shown} more issue(s)\n")
            break
        label = "skipped" if lenient and issue.skipped else "warning"
        err.write(f"toolspan: {label}: {issue}\n")
    if lenient and report.records_skipped:
        err.write(
            f"toolspan: read {report.spans_read} span(s); skipped {report.records_skipped} bad record(s)\n"
        )


def _total_bytes(paths: list[Path | str]) -> int:
    total = 0
    for p in paths:
        if p != "-":
            with contextlib.suppress(OSError):
                total += os.stat(p).st_size
    return total


def _with_logs(spans: Iterator[Span], logs: list[str], err: IO[str]) -> Iterator[Span]:
    """The spans with the log records of ``logs`` joined to them as span events."""
    from toolspan.bridge.internal import attach_logs, logs_from_bytes

    records = []
    for path in logs:
        try:
            with open(path, "rb") as f:
                records.extend(logs_from_bytes(f.read()))
        except (OSError, ValueError) as e:
            raise BridgeReadError(f"{path}: cannot read OTLP logs: {e}") from e
    joined, unmatched = attach_logs(list(spans), records)
    if unmatched:
        err.write(f"toolspan: {unmatched} of {len(records)} log records matched no span\n")
    return iter(joined)


def emit(target: str, spans: Iterable[Span], out: IO[bytes], args: argparse.Namespace) -> None:
    """Render ``spans`` with the view ``target`` into ``out`` (``args.sorted``, ``args.indent``)."""
    lines, document = _render(target, iter(spans), args.sorted)
    if lines is not None:
        _write_lines(lines, out)
    elif VIEWS[target].media == "html":
        out.write(document.encode("utf-8"))
    else:
        out.write(dumps_document(document, indent=args.indent) + b"\n")
    out.flush()


def convert(
    args: argparse.Namespace, out: IO[bytes], err: IO[str], paths: list[Path | str] | None = None
) -> int:
    """Run ``toolspan convert`` on ``paths`` (resolved from ``args.inputs`` when ``None``); returns the
    exit status."""
    report = ReadReport()
    if paths is None:
        try:
            paths = resolve_inputs(args.inputs)
        except BridgeReadError as e:
            err.write(f"toolspan: error: {e}\n")
            return 1
    total = _total_bytes(paths)
    show = args.progress or (err.isatty() and total >= _PROGRESS_MIN_BYTES)
    bar = _Bar(total, report, err) if show else None
    progress: Callable[[int], None] | None = bar
    spans = iter_spans(paths, lenient=args.lenient, report=report, progress=progress)
    try:
        if args.logs:
            spans = _with_logs(spans, args.logs, err)
        emit(args.to, spans, out, args)
    except BridgeReadError as e:
        if bar is not None:
            bar.close()
        err.write(f"toolspan: error: {e}\n")
        return 1
    if bar is not None:
        bar.close()
    _report_issues(report, args.lenient, err)
    if report.spans_read == 0:  # nothing to convert: said, and no output file is left behind
        err.write(f"toolspan: no spans in {_named(paths)}\n")
        return 1
    return 0


def _named(paths: list[Path | str]) -> str:
    """The inputs as a message names them: the first three, then how many more."""
    names = ["standard input" if p == "-" else str(p) for p in paths]
    shown = ", ".join(names[:3])
    return shown if len(names) <= 3 else f"{shown} and {len(names) - 3} more"


Runner = Callable[[argparse.Namespace, IO[bytes], IO[str], list[Path | str]], int]


def _to_output(args: argparse.Namespace, run: Runner) -> int:
    """Run a command whose output is ``-o FILE`` or stdout: inputs checked against the output, output written
    to a temporary file in its directory and renamed over the target only when the command exits 0 (or 1
    for an audit that found violations: its report is the point)."""
    err = sys.stderr
    target = args.output if args.output and args.output != "-" else None
    try:
        paths = _outputs.checked_inputs(args.inputs, target, err)
    except _outputs.OutputClash as e:
        err.write(f"toolspan: error: {e}\n")
        return 2
    except BridgeReadError as e:
        err.write(f"toolspan: error: {e}\n")
        return 2 if args.command == "audit" else 1  # an audit's 1 means "violated"
    if target is None:
        sys.stdout.flush()
        return run(args, sys.stdout.buffer, err, paths)
    try:
        pending = _outputs.open_output(target)
    except OSError as e:
        err.write(f"toolspan: error: {target}: cannot write: {e.strerror or e}\n")
        return 1
    code = 1
    try:
        code = run(args, pending.file, err, paths)
        if code == 0 or (code == 1 and args.command == "audit"):
            pending.commit()
    except OSError as e:  # writing the output (a full disk, a file size limit): the target is kept
        err.write(f"toolspan: error: {target}: cannot write: {e.strerror or e}\n")
        code = 1
    finally:
        if not pending.committed:
            pending.discard()
    return code


def _convert_command(args: argparse.Namespace) -> int:
    """``toolspan convert``."""
    return _to_output(args, convert)


def _audit_command(args: argparse.Namespace) -> int:
    """``toolspan audit``."""
    return _to_output(args, _cli_audit.run)


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "convert": _convert_command,
    "audit": _audit_command,
    "fetch": lambda args: _cli_remote.run_fetch(args, emit),
    "find": lambda args: _cli_remote.run_find(args, emit),
}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``toolspan`` command."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "serve":  # a long-running server: none of the one-shot tuning below
        return _cli_serve.run(args)
    command = _COMMANDS.get(args.command or "")
    if command is None:
        parser.print_help(sys.stderr)
        return 2
    # A one-shot conversion allocates millions of short-lived containers: keep the collector off the
    # long-lived startup objects, and collect less often.
    gc.freeze()
    old_threshold = gc.get_threshold()
    gc.set_threshold(50_000, 20, 20)
    try:
        return command(args)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        sys.stderr.write("toolspan: interrupted\n")
        return 130
    except OSError as e:
        sys.stderr.write(f"toolspan: error: {e}\n")
        return 1
    finally:
        gc.set_threshold(*old_threshold)
        gc.unfreeze()
