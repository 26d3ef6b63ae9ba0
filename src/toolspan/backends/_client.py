"""Jaeger and Tempo clients: one trace by id, and runs found with the backend's own search API."""

from __future__ import annotations

import dataclasses
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.model import Span
from toolspan.bridge.readers import BridgeReadError, ReadReport, read_spans
from toolspan.bridge.views import duration_ms, iso
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
]

MAX_RESPONSE_BYTES: Final = 256 << 20
_TIMEOUT_S: Final = 10.0
_HEX: Final = frozenset("0123456789abcdef")
_NS_PER_US: Final = 1_000
_NS_PER_S: Final = 1_000_000_000


def normal_trace_id(text: str) -> str:
    """``text`` as a 32-hex lower-case trace id (1 to 32 hex digits, left-padded: Jaeger prints 64-bit ids
    as 16 digits, Tempo's search drops leading zeros); ``ValueError`` naming what was wrong."""
    lo = text.strip().lower()
    if not lo or len(lo) > 32 or not set(lo) <= _HEX:
        raise ValueError(f"expected a trace id of up to 32 hex digits, got {text[:80]!r}")
    if set(lo) == {"0"}:
        raise ValueError("the all-zero trace id is not a trace")
    return lo.rjust(32, "0")


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


def _first_line(body: bytes) -> str:
    text = body[:300].decode("utf-8", "replace").strip().splitlines()
    return text[0][:200] if text else ""


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

    def get(self, path: str, query: Sequence[tuple[str, str]] = ()) -> bytes | None:
        """The body of ``GET url+path?query``; ``None`` on 404; ``BackendError`` on anything else."""
        url = self.url + path + ("?" + urllib.parse.urlencode(list(query)) if query else "")
        request = urllib.request.Request(url, headers={"Accept": "application/json", **self.headers})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                body: bytes = response.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            detail = _first_line(e.read())
            raise BackendError(f"{url}: HTTP {e.code}" + (f": {detail}" if detail else "")) from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            reason = getattr(e, "reason", e)
            raise BackendError(f"{url}: {reason}") from None
        if len(body) > MAX_RESPONSE_BYTES:
            raise BackendError(f"{url}: response over {MAX_RESPONSE_BYTES} bytes")
        return body

    def get_json(self, path: str, query: Sequence[tuple[str, str]] = ()) -> Any:
        body = self.get(path, query)
        if body is None:
            raise BackendError(f"{self.url}{path}: HTTP 404")
        try:
            return json.loads(body)
        except ValueError:
            raise BackendError(f"{self.url}{path}: not JSON: {_first_line(body)!r}") from None

    def trace_path(self, trace_id: str) -> str:
        raise NotImplementedError

    def read_trace(self, trace_id: str) -> tuple[list[Span], ReadReport] | None:
        """The spans of ``trace_id`` (any bad record skipped and reported), or ``None`` when the backend
        does not hold it."""
        tid = normal_trace_id(trace_id)
        path = self.trace_path(tid)
        body = self.get(path)
        if body is None:
            return None
        try:
            spans, report = read_spans(body, lenient=True)
        except BridgeReadError as e:
            raise BackendError(f"{self.url}{path}: {e}") from None
        spans = [s for s in spans if s.trace_id == tid]
        if not spans and report.issues:  # an answer that is no trace at all: say what it was
            raise BackendError(f"{self.url}{path}: {report.issues[0]}")
        return (spans, report) if spans else None

    def trace_spans(self, trace_id: str) -> list[Span] | None:
        found = self.read_trace(trace_id)
        return None if found is None else found[0]

    def find(self, query: RunQuery) -> list[Run]:
        raise NotImplementedError


def _run_of(trace_id: str, spans: Sequence[Span]) -> Run:
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
        data = doc.get("data") if type(doc) is dict else None
        if data is None:
            return []
        if type(data) is not list or not all(type(s) is str for s in data):
            raise BackendError(f"{self.url}/api/services: not a list of service names")
        return sorted(data)

    def find(self, query: RunQuery) -> list[Run]:
        services = [query.service] if query.service else self.services()
        found: dict[str, Run] = {}
        for service in services:
            params = [
                ("service", service),
                ("start", str(query.start_ns // _NS_PER_US)),
                ("end", str(-(-query.end_ns // _NS_PER_US))),
                ("limit", str(query.limit)),
            ]
            if query.tool:
                params.append(("tags", json.dumps({sc.GEN_AI_TOOL_NAME: query.tool})))
            body = self.get("/api/traces", params)
            if body is None:
                continue
            try:
                spans, _ = read_spans(body, lenient=True)
            except BridgeReadError as e:
                raise BackendError(f"{self.url}/api/traces: {e}") from None
            by_trace: dict[str, list[Span]] = {}
            for span in spans:
                by_trace.setdefault(span.trace_id, []).append(span)
            for tid, members in by_trace.items():
                found[tid] = _run_of(tid, members)
        runs = sorted(found.values(), key=lambda r: (-r.start_ns, r.trace_id))
        return runs[: query.limit]


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
        traces = doc.get("traces") if type(doc) is dict else None
        if traces is None:
            return []
        if type(traces) is not list:
            raise BackendError(f"{self.url}/api/search: traces: not a list")
        runs = []
        for i, item in enumerate(traces):
            try:
                runs.append(self._run(item, query))
            except (TypeError, ValueError, KeyError) as e:
                raise BackendError(f"{self.url}/api/search: traces[{i}]: {e}") from None
        runs.sort(key=lambda r: (-r.start_ns, r.trace_id))
        return runs[: query.limit]

    @staticmethod
    def _run(item: Any, query: RunQuery) -> Run:
        if type(item) is not dict:
            raise TypeError("not an object")
        duration = item.get("durationMs")
        return Run(
            normal_trace_id(str(item["traceID"])),
            str(item.get("rootServiceName", "")),
            str(item.get("rootTraceName", "")),
            int(item.get("startTimeUnixNano", 0)),
            None if duration is None else int(duration),
            None,
            (query.tool,) if query.tool else (),
        )
