"""Shared by every corpus runner: the scripted conversation, ground truth and the trace files.

Each runner (``run_<framework>.py``) runs in its own virtual environment, which has the framework, its
tracing and ``opentelemetry-sdk`` / ``opentelemetry-exporter-otlp-proto-common``, not toolspan. It runs
one small agent offline against a scripted model that asks, in one turn, for three parallel tool calls
(two succeed, one raises), then gives a final answer. The tools record what they really ran with into
the ground truth; the spans (and log records, where the framework emits them) are written as
OTLP JSON Lines (``traces.jsonl``, ``logs.jsonl``) and OTLP protobuf request bodies (``traces.pb``,
``logs.pb``).
"""

from __future__ import annotations

import base64
import json
import sys
import threading
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

USER_REQUEST = "What is the weather in Paris and in Tokyo, and how many people live in Atlantis?"
FINAL_ANSWER = "Paris: 18 C, sunny. Tokyo: 22 C, cloudy. I could not find the population of Atlantis."
MODEL = "scripted-model-1"
# The model's one tool-calling turn: parallel calls, each with the model's own id.
CALLS: list[dict[str, Any]] = [
    {"id": "call_weather_paris", "name": "get_weather", "arguments": {"city": "Paris"}},
    {"id": "call_weather_tokyo", "name": "get_weather", "arguments": {"city": "Tokyo"}},
    {"id": "call_population_atlantis", "name": "get_population", "arguments": {"city": "Atlantis"}},
]
WEATHER = {"Paris": {"temp_c": 18, "sky": "sunny"}, "Tokyo": {"temp_c": 22, "sky": "cloudy"}}
USAGE = [
    {"input_tokens": 120, "output_tokens": 45},
    {"input_tokens": 260, "output_tokens": 30},
]

_lock = threading.Lock()
_ran: list[dict[str, Any]] = []
# A framework that names the tools the model sees its own way (Semantic Kernel: ``Plugin-function``).
_names: dict[str, str] = {}


def rename_tools(names: dict[str, str]) -> None:
    """The model asks for (and the ground truth records) each tool under the framework's own name."""
    _names.update(names)
    for call in CALLS:
        call["name"] = names.get(call["name"], call["name"])


def _call_id(name: str, arguments: dict[str, Any]) -> str:
    for call in CALLS:
        if call["name"] == name and call["arguments"] == arguments:
            return str(call["id"])
    raise LookupError(f"the script never asked for {name}({arguments})")


def record(name: str, arguments: dict[str, Any], result: Any) -> None:
    """Record a framework's own tool (such as smolagents' ``final_answer``) that ran."""
    with _lock:
        _ran.append({"name": name, "arguments": arguments, "result": result, "error": None})


def get_weather(city: str) -> dict[str, Any]:
    """The tool body every framework wraps: records what it really ran with."""
    result = {"city": city, **WEATHER[city]}
    with _lock:
        name = _names.get("get_weather", "get_weather")
        _ran.append({"name": name, "arguments": {"city": city}, "result": result, "error": None})
    return result


def get_population(city: str, error: type[Exception] = ValueError) -> int:
    """Always fails for Atlantis: the failing tool of every run (``error``: the framework's own kind)."""
    message = f"unknown city: {city}"
    with _lock:
        _ran.append(
            {
                "name": _names.get("get_population", "get_population"),
                "arguments": {"city": city},
                "result": None,
                "error": {"type": error.__name__, "message": message},
            }
        )
    raise error(message)


class Recording:
    """A tracer provider (and logger provider) whose spans and logs end up in files."""

    def __init__(self) -> None:
        self.span_exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.span_exporter))
        self.logger_provider: Any = None
        self.log_exporter: Any = None

    def with_logs(self) -> Any:
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import InMemoryLogExporter, SimpleLogRecordProcessor

        self.log_exporter = InMemoryLogExporter()
        self.logger_provider = LoggerProvider()
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.log_exporter))
        return self.logger_provider

    def write(
        self,
        out_dir: str | Path,
        framework: str,
        versions: dict[str, str],
        ended_by: str | None = None,
        model_ids: bool = True,
    ) -> None:
        """``ended_by``: the error that ended the run before the model's final answer (one model call);
        ``model_ids=False``: the model names its calls without ids (DSPy's ReAct), so none is expected."""
        out = Path(out_dir)
        self.tracer_provider.force_flush()
        spans = sorted(self.span_exporter.get_finished_spans(), key=lambda s: s.start_time or 0)
        write_request(out, encode_spans(spans))
        if self.log_exporter is not None:
            from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

            self.logger_provider.force_flush()
            logs = self.log_exporter.get_finished_logs()
            if logs:
                log_request = _scrubbed(encode_logs(logs))
                (out / "logs.pb").write_bytes(log_request.SerializeToString())
                (out / "logs.jsonl").write_text(_json_line(log_request), encoding="utf-8")
        write_truth(out, framework, versions, ended_by, model_ids)
        print(f"{framework}: {len(spans)} spans, {len(_ran)} tool calls -> {out}")  # noqa: T201


def write_request(out: Path, request: Any) -> None:
    """One OTLP trace export request as ``traces.pb`` and ``traces.jsonl`` (this machine's paths scrubbed)."""
    out.mkdir(parents=True, exist_ok=True)
    request = _scrubbed(request)
    (out / "traces.pb").write_bytes(request.SerializeToString())
    (out / "traces.jsonl").write_text(_json_line(request), encoding="utf-8")


def write_truth(
    out: Path,
    framework: str,
    versions: dict[str, str],
    ended_by: str | None = None,
    model_ids: bool = True,
) -> None:
    """``ground_truth.json``: what the tools ran with (recorded by them), the script's ids and usage."""
    out.mkdir(parents=True, exist_ok=True)
    truth = {
        "framework": framework,
        "versions": versions,
        "user_request": USER_REQUEST,
        "final_answer": FINAL_ANSWER if ended_by is None else None,
        "ended_by": ended_by,
        "model": MODEL,
        "usage": USAGE if ended_by is None else USAGE[:1],
        # Without the model's ids: in the order the tools ran (each call's id is then its span's).
        "tool_calls": sorted(
            ({"call_id": _call_id(r["name"], r["arguments"]), **r} for r in _ran),
            key=lambda r: r["call_id"],
        )
        if model_ids
        else [{"call_id": None, **r} for r in _ran],
    }
    (out / "ground_truth.json").write_text(
        json.dumps(truth, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )


class OtlpReceiver:
    """An OTLP/HTTP trace receiver on loopback, for SDKs that export themselves (MLflow, Logfire): every
    protobuf export request they send, merged into one by ``request()``. ``endpoint``: its URL."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        bodies = self.bodies = []  # type: list[bytes]

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    import gzip

                    body = gzip.decompress(body)
                if self.path.endswith("/v1/traces"):
                    bodies.append(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def request(self) -> Any:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        merged = ExportTraceServiceRequest()
        for body in self.bodies:
            part = ExportTraceServiceRequest()
            part.ParseFromString(body)
            merged.resource_spans.extend(part.resource_spans)
        return merged

    def close(self) -> None:
        self.server.shutdown()


def _scrub(node: Any, prefixes: list[tuple[str, str]]) -> Any:
    if isinstance(node, str):
        for prefix, placeholder in prefixes:
            node = node.replace(prefix, placeholder)
        return node
    if isinstance(node, dict):
        return {key: _scrub(value, prefixes) for key, value in node.items()}
    if isinstance(node, list):
        return [_scrub(item, prefixes) for item in node]
    return node


def _scrubbed(request: Any) -> Any:
    """``request`` with this machine's paths (in stack traces) replaced by placeholders."""
    from google.protobuf.json_format import ParseDict

    prefixes = sorted(
        [
            (str(Path(__file__).resolve().parent.parent.parent), "<repo>"),
            (sys.prefix, "<venv>"),
            (sys.base_prefix, "<python>"),
        ],
        key=lambda pair: -len(pair[0]),
    )
    body = _scrub(MessageToDict(request), prefixes)
    return ParseDict(body, type(request)())


def _hex(node: Any) -> None:
    # OTLP/JSON carries trace and span ids as hex, where protobuf's JSON mapping gives base64.
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str) and value:
                node[key] = base64.b64decode(value).hex()
            else:
                _hex(value)
    elif isinstance(node, list):
        for item in node:
            _hex(item)


def _json_line(request: Any) -> str:
    body = MessageToDict(request, use_integers_for_enums=True)
    _hex(body)
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n"


def versions(*names: str) -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in names}
