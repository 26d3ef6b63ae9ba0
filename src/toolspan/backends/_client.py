"""Jaeger and Tempo clients: one trace by id, and runs found with the backend's own search API."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, Final

from toolspan import semconv as sc
from toolspan._util.ids import parse_trace_id
from toolspan.backends import _http
from toolspan.bridge.internal import nonfinite_text
from toolspan.bridge.model import Span
from toolspan.bridge.readers import BridgeReadError, ReadReport, iter_spans
from toolspan.bridge.views.internal import duration_ms, iso
from toolspan.errors import BackendError

__all__ = [
    "MAX_RESPONSE_BYTES",
    "Backend",
    "BackendError",
    "Jaeger",
    "Run",
    "RunQuery",
    "Tempo",
    "normal_trace_id",
    "run_of",
]

MAX_RESPONSE_BYTES: Final = 256 << 20
_TIMEOUT_S: Final = 10.0
_NS_PER_US: Final = 1_000
_NS_PER_S: Final = 1_000_000_000
_MAX_NS: Final = 2**64  # OTLP's times are unsigned 64-bit nanoseconds
_DOCUMENT: Final = "<document>"  # the readers' name of a parsed document
_WS: Final = re.compile(r"[ \t\r\n]*")


def _finite_float(text: str) -> float | str:
    number = float(text)
    return number if math.isfinite(number) else nonfinite_text(number)


# The standard library's parser (a fraction of orjson's peak memory on a large answer), reading NaN and
# numbers beyond a double (``1e400``) as the readers do: the strings OTLP/JSON writes for non-finite doubles.
_DECODER: Final = json.JSONDecoder(parse_constant=str, parse_float=_finite_float)


def normal_trace_id(text: str) -> str:
    """``text`` as a 32-hex lower-case trace id (1 to 32 hex digits, left-padded: Jaeger prints 64-bit ids
    as 16 digits, Tempo's search drops leading zeros); ``ValueError`` naming what was wrong."""
    hex_id = parse_trace_id(text.strip(), short=True, any_case=True)
    if hex_id is None:
        raise ValueError(f"expected a trace id of up to 32 hex digits, got {text[:80]!r}")
    if not hex_id.strip("0"):
        raise ValueError("the all-zero trace id is not a trace")
    return hex_id


@dataclasses.dataclass(frozen=True)
class RunQuery:
    """What to search for: runs of ``service`` (any when ``None``) with a call of ``tool`` (any when
    ``None``), started between ``start_ns`` and ``end_ns`` (Unix nanoseconds), at most ``limit`` of them."""

    start_ns: int
    end_ns: int
    service: str | None = None
    tool: str | None = None
    limit: int = 20


@dataclasses.dataclass(frozen=True)
class Run:
    """One run (trace) a search found; ``spans`` is ``None`` where the backend's search does not say."""

    trace_id: str
    service: str
    name: str
    start_ns: int
    duration_ms: int | None
    spans: int | None
    tools: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "service": self.service,
            "name": self.name,
            "started_at": iso(self.start_ns),
            "duration_ms": self.duration_ms,
            "spans": self.spans,
            "tools": list(self.tools),
        }


def _first_line(text: str) -> str:
    lines = text[:300].strip().splitlines()
    return lines[0][:200] if lines else ""


def documents(where: str, body: bytearray) -> list[Any]:
    """The JSON documents of an answer (one, or several one after another as a streaming API writes them).
    ``body`` is emptied once decoded: the text and the documents are held, never the bytes beside them.
    ``BackendError`` naming ``where`` and what was wrong: not JSON, nested too deep, not text."""
    try:
        text = body.decode(json.detect_encoding(body), "surrogatepass")
    except UnicodeDecodeError as e:
        raise BackendError(f"{where}: not JSON: not UTF-8 text at byte {e.start:,}") from None
    body.clear()
    found: list[Any] = []
    at, end = 0, len(text)
    try:
        while True:
            at = _WS.match(text, at).end()  # type: ignore[union-attr]
            if at == end:
                break
            doc, at = _DECODER.raw_decode(text, at)
            found.append(doc)
    except RecursionError:
        raise BackendError(f"{where}: JSON nested too deep to read") from None
    except ValueError as e:
        detail = _first_line(text)
        if isinstance(e, json.JSONDecodeError) and e.pos > len(detail):  # JSON that went wrong further on
            raise BackendError(f"{where}: not JSON: line {e.lineno} column {e.colno}: {e.msg}") from None
        raise BackendError(f"{where}: not JSON: {detail!r}") from None
    if not found:
        raise BackendError(f"{where}: an empty answer, not JSON")
    return found


class Backend:
    """A trace backend at ``url``; subclasses say where a trace and a search live."""

    kind: str = ""

    def __init__(self, url: str, *, headers: Mapping[str, str] | None = None, timeout_s: float = _TIMEOUT_S):
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"expected an http:// or https:// URL, got {url[:120]!r}")
        self.url = url.rstrip("/")
        self.headers = dict(headers or {})
        self.timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    def get(self, path: str, query: Sequence[tuple[str, str]] = ()) -> bytearray | None:
        """The body of ``GET url+path?query``, read within ``timeout_s`` seconds in all (``_http.get``);
        ``None`` on 404; ``BackendError`` on anything else."""
        url = self.url + path + ("?" + urllib.parse.urlencode(list(query)) if query else "")
        headers = {"Accept": "application/json", **self.headers}
        return _http.get(
            url, headers, timeout_s=self.timeout_s, max_bytes=MAX_RESPONSE_BYTES, where=self.url + path
        )

    def get_json(self, path: str, query: Sequence[tuple[str, str]] = ()) -> Any:
        """The one JSON object of ``GET url+path?query``; ``BackendError`` on 404 too."""
        body = self.get(path, query)
        if body is None:
            raise BackendError(f"{self.url}{path}: HTTP 404")
        found = documents(self.url + path, body)
        if len(found) > 1:
            raise BackendError(f"{self.url}{path}: {len(found)} JSON documents, expected one")
        if type(found[0]) is not dict:
            raise BackendError(f"{self.url}{path}: expected a JSON object, got {_short(found[0])}")
        return found[0]

    def read_spans(
        self, path: str, query: Sequence[tuple[str, str]] = ()
    ) -> tuple[list[Span], ReadReport] | None:
        """The spans of the answer to ``GET url+path?query`` (lenient: a bad record is skipped and reported,
        named by this URL), or ``None`` on 404; ``BackendError`` when the answer cannot be read at all."""
        where = self.url + path
        body = self.get(path, query)
        if body is None:
            return None
        found = documents(where, body)
        for i, doc in enumerate(
            found
        ):  # a backend answers objects; anything else is no trace (and a list or a
            if type(doc) is not dict:  # string given to the readers would name sources: files to open)
                at = f" (document {i + 1})" if len(found) > 1 else ""
                raise BackendError(f"{where}: expected a JSON object{at}, got {_short(doc)}")
        report = ReadReport()
        spans: list[Span] = []
        try:
            while found:
                first = len(report.issues)
                spans.extend(iter_spans(found.pop(0), lenient=True, report=report))
                report.issues[first:] = [
                    dataclasses.replace(issue, source=where) if issue.source == _DOCUMENT else issue
                    for issue in report.issues[first:]
                ]
        except BridgeReadError as e:
            raise BackendError(f"{where}: {e}") from None
        except RecursionError:
            raise BackendError(f"{where}: a trace nested too deep to read") from None
        except (ValueError, OverflowError) as e:
            raise BackendError(f"{where}: not a trace the bridge can read: {e}") from None
        return spans, report

    def trace_path(self, trace_id: str) -> str:
        raise NotImplementedError

    def read_trace(self, trace_id: str) -> tuple[list[Span], ReadReport] | None:
        """The spans of ``trace_id`` (any bad record skipped and reported), or ``None`` when the backend
        does not hold it."""
        tid = normal_trace_id(trace_id)
        path = self.trace_path(tid)
        read = self.read_spans(path)
        if read is None:
            return None
        spans, report = read
        spans = [s for s in spans if s.trace_id == tid]
        if not spans and report.issues:  # an answer that is no trace at all: say what it was
            raise BackendError(str(report.issues[0]))
        return (spans, report) if spans else None

    def trace_spans(self, trace_id: str) -> list[Span] | None:
        found = self.read_trace(trace_id)
        return None if found is None else found[0]

    def find(self, query: RunQuery) -> list[Run]:
        raise NotImplementedError


def run_of(trace_id: str, spans: Sequence[Span]) -> Run:
    """The run ``spans`` (all of one trace) make, as ``find`` lists it: named by its root span."""
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if s.parent_span_id is None or s.parent_span_id not in ids]
    root = min(roots or spans, key=lambda s: (s.start_ns, s.span_id))
    start = min(s.start_ns for s in spans)
    ends = [s.end_ns for s in spans if s.end_ns is not None]
    tools = sorted(
        {str(s.attributes[sc.GEN_AI_TOOL_NAME]) for s in spans if sc.GEN_AI_TOOL_NAME in s.attributes}
    )
    return Run(
        trace_id,
        str(root.resource.get(sc.SERVICE_NAME, "")),
        root.name,
        start,
        None if not ends else duration_ms(start, max(ends)),
        len(spans),
        tuple(tools),
    )


class Jaeger(Backend):
    """Jaeger's query service (the UI's port, 16686): ``api`` ``"v3"`` (OTLP) or ``"v1"`` for traces."""

    kind = "Jaeger"

    def __init__(
        self,
        url: str,
        *,
        api: str = "v3",
        headers: Mapping[str, str] | None = None,
        timeout_s: float = _TIMEOUT_S,
    ) -> None:
        if api not in ("v1", "v3"):
            raise ValueError(f"expected the Jaeger API v1 or v3, got {api!r}")
        super().__init__(url, headers=headers, timeout_s=timeout_s)
        self.api = api

    def trace_path(self, trace_id: str) -> str:
        return f"/api/v3/traces/{trace_id}" if self.api == "v3" else f"/api/traces/{trace_id}"

    def services(self) -> list[str]:
        doc = self.get_json("/api/services")
        data = doc.get("data")
        if data is None:
            return []
        if type(data) is not list or not all(type(s) is str for s in data):
            raise BackendError(f"{self.url}/api/services: not a list of service names")
        return sorted(data)

    def find(self, query: RunQuery) -> list[Run]:
        found = self.search(query)
        runs = sorted(
            (run_of(tid, spans) for tid, spans in found.items()), key=lambda r: (-r.start_ns, r.trace_id)
        )
        return runs[: query.limit]

    def search(self, query: RunQuery, services: Sequence[str] | None = None) -> dict[str, list[Span]]:
        """The spans of the traces Jaeger's search finds, by trace id: up to ``query.limit`` per service
        searched (``services``, else ``query.service``, else every service of ``/api/services``)."""
        if services is None:
            services = [query.service] if query.service else self.services()
        by_trace: dict[str, list[Span]] = {}
        for service in services:
            params = [
                ("service", service),
                ("start", str(query.start_ns // _NS_PER_US)),
                ("end", str(-(-query.end_ns // _NS_PER_US))),
                ("limit", str(query.limit)),
            ]
            if query.tool:
                params.append(("tags", json.dumps({sc.GEN_AI_TOOL_NAME: query.tool})))
            read = self.read_spans("/api/traces", params)
            if read is None:
                continue
            if not read[0] and read[1].issues:  # an answer with no span readable: say what it was
                raise BackendError(str(read[1].issues[0]))
            found: dict[str, list[Span]] = {}
            for span in read[0]:
                found.setdefault(span.trace_id, []).append(span)
            by_trace.update(found)  # a trace found for two services: the spans of one answer
        return by_trace


def _traceql_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Tempo(Backend):
    """Grafana Tempo's HTTP API (port 3200): traces from ``/api/v2/traces``, runs found with TraceQL."""

    kind = "Tempo"

    def trace_path(self, trace_id: str) -> str:
        return f"/api/v2/traces/{trace_id}"

    @staticmethod
    def traceql(query: RunQuery) -> str:
        terms = []
        if query.service:
            terms.append(f"resource.{sc.SERVICE_NAME} = {_traceql_string(query.service)}")
        if query.tool:
            terms.append(f"span.{sc.GEN_AI_TOOL_NAME} = {_traceql_string(query.tool)}")
        return "{ " + " && ".join(terms) + " }" if terms else "{}"

    def find(self, query: RunQuery) -> list[Run]:
        params = [
            ("q", self.traceql(query)),
            ("start", str(query.start_ns // _NS_PER_S)),
            ("end", str(-(-query.end_ns // _NS_PER_S))),
            ("limit", str(query.limit)),
        ]
        doc = self.get_json("/api/search", params)
        traces = doc.get("traces")
        if traces is None:
            return []
        if type(traces) is not list:
            raise BackendError(f"{self.url}/api/search: traces: not a list")
        runs = []
        for i, item in enumerate(traces):
            try:
                runs.append(self._run(item, query))
            except ValueError as e:
                field, message = e.args if len(e.args) == 2 else ("", str(e))
                where = f"traces[{i}]" + (f".{field}" if field else "")
                raise BackendError(f"{self.url}/api/search: {where}: {message}") from None
        runs.sort(key=lambda r: (-r.start_ns, r.trace_id))
        return runs[: query.limit]

    @staticmethod
    def _run(item: Any, query: RunQuery) -> Run:
        if type(item) is not dict:
            raise ValueError("", f"expected an object, got {_short(item)}")
        duration = item.get("durationMs")
        try:
            trace_id = normal_trace_id(_text(item, "traceID", required=True))
        except ValueError as e:
            raise ValueError("traceID", str(e.args[-1])) from None
        return Run(
            trace_id,
            _text(item, "rootServiceName"),
            _text(item, "rootTraceName"),
            _whole(item, "startTimeUnixNano", _MAX_NS, "Unix nanoseconds of 0 up to 2^64-1"),
            None
            if duration is None
            else _whole(item, "durationMs", _MAX_NS // 1_000_000, "whole milliseconds"),
            None,
            (query.tool,) if query.tool else (),
        )


def _text(item: dict[str, Any], key: str, *, required: bool = False) -> str:
    """``item[key]``, a string (``""`` when absent and not ``required``)."""
    if key not in item and not required:
        return ""
    value = item.get(key)
    if type(value) is not str:
        raise ValueError(key, f"expected a string, got {_short(value)}")
    return value


def _whole(item: dict[str, Any], key: str, limit: int, what: str) -> int:
    """``item[key]`` (0 when absent): a whole number below ``limit``, as a JSON number or its decimal text
    (Tempo writes 64-bit numbers as text)."""
    value = item.get(key, 0)
    number: int | None = None
    if type(value) is int:
        number = value
    elif type(value) is str and value.isascii() and value.isdigit() and len(value) <= 20:
        number = int(value)
    if number is None or not 0 <= number < limit:
        raise ValueError(key, f"expected {what}, got {_short(value)}")
    return number


def _short(value: Any) -> str:
    """A value for a one-line message: its JSON type for a container, else its first 40 characters."""
    if isinstance(value, (dict, list)):
        return "an object" if isinstance(value, dict) else "an array"
    return repr(value)[:40] if not isinstance(value, int) or value.bit_length() < 128 else "a number too long"
