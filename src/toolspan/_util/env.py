"""Every environment variable toolspan reads, documented once (the table of docs/environment.md repeats this).

Settings resolve as: explicit argument > environment variable > default. Only this module reads
``os.environ`` for toolspan's own settings; the standard ``OTEL_*`` exporter variables are read by the
OpenTelemetry SDK and exporters themselves, and are listed here so the table is complete.
"""

from __future__ import annotations

import logging
import os
from typing import Final, NamedTuple

_logger = logging.getLogger(__name__)


class EnvVar(NamedTuple):
    name: str
    default: str
    doc: str


TOOLSPAN_CAPTURE_CONTENT: Final = EnvVar(
    "TOOLSPAN_CAPTURE_CONTENT",
    "true",
    "Record tool arguments/results and agent messages on spans (`true`/`false`).",
)
TOOLSPAN_MAX_ATTRIBUTE_BYTES: Final = EnvVar(
    "TOOLSPAN_MAX_ATTRIBUTE_BYTES",
    "16384",
    "Byte budget of one captured content value; longer JSON is cut to valid JSON and marked.",
)
TOOLSPAN_REDACT_KEYS: Final = EnvVar(
    "TOOLSPAN_REDACT_KEYS",
    "",
    "Comma-separated extra key names whose values are redacted, on top of the built-in secret keys.",
)
TOOLSPAN_CONVENTIONS: Final = EnvVar(
    "TOOLSPAN_CONVENTIONS",
    "genai,openinference",
    "Attribute conventions tool spans are written in: `genai`, `openinference` or `genai,openinference`.",
)
TOOLSPAN_SERVICE_NAME: Final = EnvVar(
    "TOOLSPAN_SERVICE_NAME",
    "",
    "Service name used by `configure()` when neither the argument nor `OTEL_SERVICE_NAME` is set.",
)
TOOLSPAN_TIMELINE_DIR: Final = EnvVar(
    "TOOLSPAN_TIMELINE_DIR",
    "toolspan-timeline",
    "Directory the `toolspan_timeline` exporter writes act/observe JSON Lines and per-trace files to.",
)
TOOLSPAN_OTLP_FILE: Final = EnvVar(
    "TOOLSPAN_OTLP_FILE",
    "toolspan-traces.jsonl",
    "File the `toolspan_otlp_file` exporter appends OTLP JSON Lines to (Collector `file` exporter format).",
)
TOOLSPAN_JSON: Final = EnvVar(
    "TOOLSPAN_JSON",
    "auto",
    "JSON library of the bridge readers and `toolspan convert`: `auto` (orjson when installed) or `stdlib`.",
)
TOOLSPAN_OTEL_SHORTCUTS: Final = EnvVar(
    "TOOLSPAN_OTEL_SHORTCUTS",
    "on",
    "`off`: only OpenTelemetry's and CPython's public APIs (slower; to check the fallbacks).",
)
TOOLSPAN_SERVER_TOKEN: Final = EnvVar(
    "TOOLSPAN_SERVER_TOKEN",
    "",
    "The application's bearer token `toolspan serve` requires on ingest and reads when `--token` is not"
    " given (it never decides); `toolspan.replay` from a server URL sends it when `token=` is not given.",
)
TOOLSPAN_DECIDERS: Final = EnvVar(
    "TOOLSPAN_DECIDERS",
    "",
    "Decider tokens of `toolspan serve` when no `--decider` is given, `name=token,name=token`: each may"
    " read, decide and cancel tool calls through the control channel, recorded as its name.",
)
TOOLSPAN_REPLAYING: Final = EnvVar(
    "TOOLSPAN_REPLAYING",
    "",
    "Set by `toolspan.replay()` while it runs, for the processes started meanwhile (a `spawn` worker): a"
    " tool called in such a process fails with `ReplayError` instead of running its body.",
)
TOOLSPAN_DATABASE_URL: Final = EnvVar(
    "TOOLSPAN_DATABASE_URL",
    "toolspan.db",
    "Store of `toolspan serve` when `--db` is not given: an SQLite file, or a `postgresql://` URL (replicas"
    " sharing one database and one stream; needs the `postgres` extra).",
)
TOOLSPAN_PENDING_SPANS: Final = EnvVar(
    "TOOLSPAN_PENDING_SPANS",
    "false",
    "`configure()` with OTLP from the environment also exports each tool span when it starts (a running tool "
    "is visible on `toolspan serve`); `all`: every span when it starts, agents and plans too (a whole run "
    "streams live, to the trace list, the trace page and AG-UI).",
)
TOOLSPAN_POLICY: Final = EnvVar(
    "TOOLSPAN_POLICY",
    "",
    "Policy file (JSON or YAML) `configure()` checks every tool call against before its body runs.",
)
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: Final = EnvVar(
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    "",
    "The GenAI instrumentations' content switch: a no-content value (`false`, `no_content`, `0`) "
    "turns toolspan's capture off too.",
)

# Read by the OpenTelemetry SDK / exporters (and by `configure()` to pick exporters).
OTEL_SERVICE_NAME: Final = EnvVar("OTEL_SERVICE_NAME", "", "Service name (`service.name`).")
OTEL_RESOURCE_ATTRIBUTES: Final = EnvVar(
    "OTEL_RESOURCE_ATTRIBUTES", "", "Extra resource attributes, `key=value,key=value`."
)
OTEL_TRACES_EXPORTER: Final = EnvVar(
    "OTEL_TRACES_EXPORTER",
    "",
    "Comma-separated exporter names (`otlp`, `console`, `none`, `toolspan_timeline`, "
    "`toolspan_otlp_file`, or any `opentelemetry_traces_exporter` entry point). Unset: `otlp` when an "
    "OTLP endpoint is set, otherwise none.",
)
OTEL_EXPORTER_OTLP_ENDPOINT: Final = EnvVar("OTEL_EXPORTER_OTLP_ENDPOINT", "", "OTLP endpoint.")
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Final = EnvVar(
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "", "OTLP endpoint for traces only."
)
OTEL_EXPORTER_OTLP_PROTOCOL: Final = EnvVar(
    "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "`grpc` or `http/protobuf`."
)
OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: Final = EnvVar(
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "", "Protocol for traces only; overrides the one above."
)
OTEL_EXPORTER_OTLP_HEADERS: Final = EnvVar(
    "OTEL_EXPORTER_OTLP_HEADERS", "", "Headers sent with every export, `key=value,key=value`."
)
OTEL_BSP_MAX_QUEUE_SIZE: Final = EnvVar(
    "OTEL_BSP_MAX_QUEUE_SIZE",
    "2048",
    "Spans `configure()`'s batch processors hold at most while exporting (more are dropped).",
)
OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: Final = EnvVar(
    "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT",
    "",
    "The SDK cuts attribute strings to this many characters, unmarked: toolspan's byte budget of a captured"
    " value stays within it (so toolspan cuts first, and marks the cut).",
)
OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT: Final = EnvVar(
    "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT",
    "",
    "The same for span attributes only; overrides `OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`.",
)
OTEL_LOGS_EXPORTER: Final = EnvVar(
    "OTEL_LOGS_EXPORTER",
    "",
    "Where `configure()` sends log records (`toolspan.text_delta` chunks): `otlp`, `console`, `none`. "
    "Unset: `otlp` when an OTLP endpoint is set, otherwise none.",
)
OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: Final = EnvVar(
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "", "OTLP endpoint for logs only."
)
OTEL_EXPORTER_OTLP_LOGS_PROTOCOL: Final = EnvVar(
    "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "", "Protocol for logs only; overrides `OTEL_EXPORTER_OTLP_PROTOCOL`."
)

ALL: Final = (
    TOOLSPAN_CAPTURE_CONTENT,
    TOOLSPAN_MAX_ATTRIBUTE_BYTES,
    TOOLSPAN_REDACT_KEYS,
    TOOLSPAN_CONVENTIONS,
    TOOLSPAN_SERVICE_NAME,
    TOOLSPAN_TIMELINE_DIR,
    TOOLSPAN_OTLP_FILE,
    TOOLSPAN_JSON,
    TOOLSPAN_OTEL_SHORTCUTS,
    TOOLSPAN_SERVER_TOKEN,
    TOOLSPAN_DECIDERS,
    TOOLSPAN_REPLAYING,
    TOOLSPAN_DATABASE_URL,
    TOOLSPAN_PENDING_SPANS,
    TOOLSPAN_POLICY,
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
    OTEL_SERVICE_NAME,
    OTEL_RESOURCE_ATTRIBUTES,
    OTEL_TRACES_EXPORTER,
    OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    OTEL_EXPORTER_OTLP_PROTOCOL,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
    OTEL_EXPORTER_OTLP_HEADERS,
    OTEL_BSP_MAX_QUEUE_SIZE,
    OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT,
    OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT,
    OTEL_LOGS_EXPORTER,
    OTEL_EXPORTER_OTLP_LOGS_ENDPOINT,
    OTEL_EXPORTER_OTLP_LOGS_PROTOCOL,
)

_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off", "no_content", "none"})


def get(var: EnvVar) -> str | None:
    """The variable's value, stripped; ``None`` when unset or empty."""
    value = os.environ.get(var.name, "").strip()
    return value or None


def put(var: EnvVar, value: str | None) -> None:
    """Set ``var`` for this process and those it starts (``None``: remove it)."""
    if value is None:
        os.environ.pop(var.name, None)
    else:
        os.environ[var.name] = value


def get_bool(var: EnvVar) -> bool | None:
    """``True``/``False`` for a recognised boolean; ``None`` when unset. Unknown values are logged."""
    value = get(var)
    if value is None:
        return None
    low = value.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    _logger.warning("toolspan: ignoring %s=%r (expected true or false)", var.name, value)
    return None


def get_int(var: EnvVar, minimum: int = 0) -> int | None:
    """A whole number ``>= minimum``; ``None`` when unset. Bad values are logged and ignored."""
    value = get(var)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        number = minimum - 1
    if number < minimum:
        _logger.warning("toolspan: ignoring %s=%r (expected a whole number >= %d)", var.name, value, minimum)
        return None
    return number


def get_list(var: EnvVar) -> tuple[str, ...]:
    """Comma-separated values, stripped, empties dropped."""
    value = get(var)
    if value is None:
        return ()
    return tuple(part.strip() for part in value.split(",") if part.strip())


def sdk_attribute_limit() -> int | None:
    """The SDK's length limit of a span attribute string (``OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT``, else
    ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``; characters), ``None`` when there is none."""
    for var in (OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT, OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT):
        value = get(var)
        if value is not None:
            return get_int(var, minimum=0)
    return None


def genai_capture_content() -> bool | None:
    """What ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` says about capturing content.

    The GenAI instrumentations accept booleans and the newer modes (``NO_CONTENT``, ``SPAN_ONLY``,
    ``EVENT_ONLY``, ``SPAN_AND_EVENT``); only a no-content value turns toolspan's capture off.
    """
    value = get(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)
    if value is None:
        return None
    return value.lower() not in _FALSE
