"""``toolspan fetch`` and ``toolspan find``: runs read from Jaeger or Tempo over their own HTTP APIs.

``toolspan fetch TRACE_ID... --jaeger URL|--tempo URL --to VIEW [-o FILE]`` reads each trace by id
(Jaeger's ``/api/v3/traces/{id}``, or ``/api/traces/{id}`` with ``--api v1``; Tempo's
``/api/v2/traces/{id}``) and writes it in a frontend format, as ``toolspan convert`` would from a file.

``toolspan find --jaeger URL|--tempo URL [--service NAME] [--tool NAME] [--since 1h | --start T --end T]``
finds runs with the backend's own search (Jaeger's ``/api/traces`` with ``tags``, Tempo's TraceQL
``/api/search``) and prints one JSON line per run, newest first (``trace_id``, ``service``, ``name``,
``started_at``, ``duration_ms``, ``spans``, ``tools``); with ``--to VIEW`` it reads every run found and writes
them all in that format. A progress bar on stderr counts the traces read (``--progress``, or on a
terminal when there are more than a few).

Exit status: 0 on success, 1 when a backend fails, a trace is not there or a search finds no run (one line
on stderr each, saying what was asked; the traces that were read are still written), 2 on bad usage (a bad
trace id, URL, time or flag).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import IO, Any, Final

from toolspan.cli._help import HelpFormatter, plain
from toolspan.cli._options import Option, add_options

__all__ = ["add_parsers", "backend_url", "run_fetch", "run_find"]

_DURATION: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")
_UNIT_S: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_BAR_MIN_TRACES: Final = 5  # on a terminal, the bar shows from this many traces up
_NS_PER_S: Final = 1_000_000_000

# What renders spans into a view and writes it (``toolspan convert``'s writer).
Emit = Callable[[str, list[Any], IO[bytes], argparse.Namespace], None]


def _trace_id(text: str) -> str:
    from toolspan.backends import normal_trace_id

    try:
        return normal_trace_id(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def backend_url(text: str) -> str:
    """An argparse type: a backend's http:// or https:// base URL."""
    if not re.match(r"^https?://[^/\s]+", text):
        raise argparse.ArgumentTypeError(f"expected an http:// or https:// URL, got {text[:120]!r}")
    return text


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name.strip()):
        raise argparse.ArgumentTypeError(f"expected 'Name: value', got {text[:80]!r}")
    if any(c in value for c in "\r\n\0"):
        raise argparse.ArgumentTypeError("a header value cannot hold a line break")
    return name.strip(), value.strip()


def _duration_s(text: str) -> float:
    match = _DURATION.match(text)
    if match is None or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"expected a duration like 30m, 2h or 7d, got {text[:40]!r}")
    return float(match.group(1)) * _UNIT_S[match.group(2)]


def _time_ns(text: str) -> int:
    """A time: RFC 3339 (``2026-11-27T10:00:00Z``, an offset, or none for UTC) or Unix seconds."""
    raw = text.strip()
    try:
        seconds = float(raw)
    except ValueError:
        try:
            moment = datetime.fromisoformat(raw[:-1] + "+00:00" if raw[-1:] in "zZ" and raw else raw)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an RFC 3339 time (2026-11-27T10:00:00Z) or Unix seconds, got {text[:40]!r}"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        seconds = moment.timestamp()
    if not (math.isfinite(seconds) and 0 <= seconds < 2**63 / _NS_PER_S):
        raise argparse.ArgumentTypeError(f"time out of range: {text[:40]!r}")
    return int(seconds * _NS_PER_S)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"expected a number of 1..10000, got {text[:20]!r}")
    return value


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0.1):
        raise argparse.ArgumentTypeError(f"expected seconds of 0.1 or more, got {text[:20]!r}")
    return value


def _backend_options(views: tuple[str, ...], to_required: bool) -> tuple[Option, ...]:
    """The flags ``fetch`` and ``find`` share: the backend (one of ``--jaeger``, ``--tempo``), the output."""
    return (
        Option(
            ("--jaeger",), "Jaeger's query service (UI port, 16686)", backend_url, metavar="URL", group="at"
        ),
        Option(("--tempo",), "Tempo's HTTP API (port 3200)", backend_url, metavar="URL", group="at"),
        Option(
            ("--api",),
            "Jaeger API the traces are read from (v1: microseconds, arrays as text, no link attributes)",
            default="v3",
            choices=("v3", "v1"),
        ),
        Option(
            ("--to",),
            "output format (as toolspan convert)" + ("" if to_required else "; without it: the runs found"),
            choices=views,
            required=to_required,
        ),
        Option(("-o", "--output"), "write here instead of stdout", metavar="FILE"),
        Option(
            ("--header",),
            "HTTP header sent to the backend (repeat), e.g. 'Authorization: Bearer ...'",
            _header,
            metavar="'NAME: VALUE'",
            action="append",
        ),
        Option(
            ("--timeout",),
            "seconds for each whole answer (connecting, headers, body, redirects)",
            _timeout,
            10.0,
        ),
        Option(("--progress",), "show a progress bar on stderr", action="store_true"),
        Option(("--sorted",), "events: buffer and order by time", action="store_true"),
        Option(("--indent",), "indent JSON documents (not JSON Lines)", int),
    )


_FIND_OPTIONS: tuple[Option, ...] = (
    Option(("--service",), "runs of this service (service.name)", metavar="NAME"),
    Option(("--tool",), "runs with a call of this tool (gen_ai.tool.name)", metavar="NAME"),
    Option(
        ("--since",),
        "runs started this long ago or later (default 1h)",
        _duration_s,
        metavar="DURATION",
        group="when",
    ),
    Option(("--start",), "runs started at or after (RFC 3339)", _time_ns, metavar="TIME", group="when"),
    Option(("--end",), "runs started before (default: now)", _time_ns, metavar="TIME"),
    Option(("--limit",), "runs at most (which ones is the backend search's choice)", _positive, 20),
)


def add_parsers(sub: Any, views: tuple[str, ...]) -> None:
    """Register ``fetch`` and ``find`` on an ``argparse`` subparsers object."""
    doc = plain(__doc__)
    fetch = sub.add_parser(
        "fetch",
        help="read runs from Jaeger or Tempo by trace id into a frontend format",
        description=doc,
        formatter_class=HelpFormatter,
    )
    trace_ids = Option(("trace_ids",), "16 or 32 hex digits", _trace_id, metavar="TRACE_ID", nargs="+")
    add_options(fetch, (trace_ids, *_backend_options(views, to_required=True)), required_groups=("at",))
    find = sub.add_parser(
        "find",
        help="find runs in Jaeger or Tempo (service, tool, time range); --to converts them all",
        description=doc,
        formatter_class=HelpFormatter,
    )
    add_options(find, (*_FIND_OPTIONS, *_backend_options(views, to_required=False)), required_groups=("at",))


class _TraceBar:
    """A one-line progress bar on stderr: traces read of the total, and spans read."""

    def __init__(self, total: int, stream: IO[str]) -> None:
        self.total = total
        self.done = 0
        self.spans = 0
        self.stream = stream

    def step(self, spans: int) -> None:
        self.done += 1
        self.spans += spans
        filled = int(30 * self.done / self.total) if self.total else 30
        self.stream.write(
            f"\r[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} traces  {self.spans:,} spans"
        )
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def _backend(args: argparse.Namespace) -> Any:
    from toolspan.backends import Jaeger, Tempo

    headers = dict(args.header)
    if args.jaeger:
        return Jaeger(args.jaeger, api=args.api, headers=headers, timeout_s=args.timeout)
    return Tempo(args.tempo, headers=headers, timeout_s=args.timeout)


def _read_all(
    backend: Any, trace_ids: list[str], args: argparse.Namespace, err: IO[str]
) -> tuple[list[Any], int]:
    """The spans of every trace (those that could be read) and the count of failures (each on stderr)."""
    from toolspan.backends import BackendError

    show = args.progress or (err.isatty() and len(trace_ids) >= _BAR_MIN_TRACES)
    bar = _TraceBar(len(trace_ids), err) if show else None
    spans: list[Any] = []
    failed = 0
    problems: list[str] = []
    for tid in trace_ids:
        try:
            found = backend.read_trace(tid)
        except BackendError as e:
            found, failed = None, failed + 1
            problems.append(f"toolspan: error: {e}\n")
        else:
            if found is None:
                failed += 1
                problems.append(
                    f"toolspan: error: trace {tid}: not found in {backend.kind} at {backend.url}\n"
                )
            else:
                spans.extend(found[0])
                problems.extend(f"toolspan: warning: trace {tid}: {issue}\n" for issue in found[1].issues)
        if bar is not None:
            bar.step(0 if found is None else len(found[0]))
    if bar is not None:
        bar.close()
    for line in problems:
        err.write(line)
    return spans, failed


def _write(args: argparse.Namespace, err: IO[str], produce: Callable[[IO[bytes]], int]) -> int:
    """Run ``produce`` on stdout or on ``-o FILE`` (replaced only once something was written)."""
    from toolspan.cli import _output as _outputs

    target = args.output if args.output and args.output != "-" else None
    if target is None:
        sys.stdout.flush()
        return produce(sys.stdout.buffer)
    try:
        pending = _outputs.open_output(target)
    except OSError as e:
        err.write(f"toolspan: error: {target}: cannot write: {e.strerror or e}\n")
        return 1
    code, wrote = 1, False
    try:
        code = produce(pending.file)
        wrote = code == 0 or pending.file.tell() > 0
        if wrote:
            pending.commit()
    except OSError as e:
        err.write(f"toolspan: error: {target}: cannot write: {e.strerror or e}\n")
        code = 1
    finally:
        if not pending.committed:
            pending.discard()
    return code


def _convert(args: argparse.Namespace, trace_ids: list[str], emit: Emit, backend: Any, err: IO[str]) -> int:
    from toolspan.bridge.readers import BridgeReadError

    def produce(out: IO[bytes]) -> int:
        spans, failed = _read_all(backend, trace_ids, args, err)
        if not spans and failed:
            return 1
        try:
            emit(args.to, spans, out, args)
        except BridgeReadError as e:
            err.write(f"toolspan: error: {e}\n")
            return 1
        return 1 if failed else 0

    return _write(args, err, produce)


def run_fetch(args: argparse.Namespace, emit: Emit) -> int:
    """``toolspan fetch``; returns the exit status."""
    err = sys.stderr
    try:
        backend = _backend(args)
    except ValueError as e:
        err.write(f"toolspan fetch: error: {e}\n")
        return 2
    return _convert(args, list(dict.fromkeys(args.trace_ids)), emit, backend, err)


def _query(args: argparse.Namespace) -> Any:
    from toolspan.backends import RunQuery

    now = time.time_ns()
    end = args.end if args.end is not None else now
    if args.start is not None:
        start = args.start
    else:
        start = end - int((args.since if args.since is not None else 3600.0) * _NS_PER_S)
    if start >= end:
        raise ValueError("--start must be before --end")
    return RunQuery(
        start_ns=max(0, start), end_ns=end, service=args.service, tool=args.tool, limit=args.limit
    )


def _none_found(args: argparse.Namespace, query: Any) -> str:
    """What a search that found nothing asked for: ``no runs of service 'x' calling tool 'y' in the last
    hour`` (or ``between`` its two times, in UTC)."""
    what = "no runs"
    if query.service is not None:
        what += f" of service {query.service!r}"
    if query.tool is not None:
        what += f" calling tool {query.tool!r}"
    if args.start is None and args.end is None:
        seconds = (query.end_ns - query.start_ns) / _NS_PER_S
        for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
            if seconds >= size:
                count = seconds / size
                return f"{what} in the last {unit}" if count == 1 else f"{what} in the last {count:g} {unit}s"
        return f"{what} in the last {seconds:g} seconds"

    def utc(ns: int) -> str:
        return datetime.fromtimestamp(ns / _NS_PER_S, timezone.utc).isoformat(timespec="seconds")

    return f"{what} between {utc(query.start_ns)} and {utc(query.end_ns)}"


def run_find(args: argparse.Namespace, emit: Emit) -> int:
    """``toolspan find``; returns the exit status."""
    from toolspan.backends import BackendError
    from toolspan.bridge import write_json_lines

    err = sys.stderr
    try:
        backend = _backend(args)
        query = _query(args)
    except ValueError as e:
        err.write(f"toolspan find: error: {e}\n")
        return 2
    try:
        runs = backend.find(query)
    except BackendError as e:
        err.write(f"toolspan: error: {e}\n")
        return 1
    if not runs:  # nothing to list or convert: said, exit 1 (no output file is written)
        err.write(f"toolspan find: {_none_found(args, query)}\n")
        return 1
    if args.to is not None:
        return _convert(args, [r.trace_id for r in runs], emit, backend, err)

    def produce(out: IO[bytes]) -> int:
        write_json_lines(_jsons(runs), out)
        out.flush()
        return 0

    return _write(args, err, produce)


def _jsons(runs: list[Any]) -> Iterator[dict[str, Any]]:
    for run in runs:
        yield run.to_json()
