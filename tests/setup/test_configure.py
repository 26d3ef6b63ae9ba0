"""toolspan.configure(): provider only when none is installed, exporters from the standard variables."""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace as trace_api
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.instrumentation.threading import ThreadingInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

from toolspan import config
from toolspan._setup import configure as _setup
from toolspan._setup.configure import configure, instrument_threads
from toolspan._util import env as _env
from toolspan.exporters.otlp_file import OtlpJsonFileExporter
from toolspan.exporters.timeline import TimelineJsonExporter
from toolspan.testing import installed_tracer_provider


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture(autouse=True)
def clean_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No OTEL_/TOOLSPAN_ variables, no global provider, the config and threading state restored."""
    for var in _env.ALL:
        monkeypatch.delenv(var.name, raising=False)
    for name in (
        "OTEL_BSP_MAX_QUEUE_SIZE",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "OTEL_PYTHON_TRACER_PROVIDER",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(_env.TOOLSPAN_TIMELINE_DIR.name, str(tmp_path / "timeline"))
    monkeypatch.setenv(_env.TOOLSPAN_OTLP_FILE.name, str(tmp_path / "traces.jsonl"))
    saved = (
        trace_api._TRACER_PROVIDER_SET_ONCE,
        trace_api._TRACER_PROVIDER,
        trace_api._PROXY_TRACER_PROVIDER,
    )
    saved_config = config._current
    saved_threading = _setup._threading_warned
    trace_api._TRACER_PROVIDER_SET_ONCE = Once()
    trace_api._TRACER_PROVIDER = None
    trace_api._PROXY_TRACER_PROVIDER = trace_api.ProxyTracerProvider()
    try:
        yield
    finally:
        installed = trace_api._TRACER_PROVIDER
        if isinstance(installed, TracerProvider) and installed is not saved[1]:
            installed.shutdown()
        trace_api._TRACER_PROVIDER_SET_ONCE, trace_api._TRACER_PROVIDER, trace_api._PROXY_TRACER_PROVIDER = (
            saved
        )
        config.set_config(saved_config)
        _setup._threading_warned = saved_threading


def processors(provider: Any) -> list[SpanProcessor]:
    return list(provider._active_span_processor._span_processors)


def exporter_classes(provider: Any) -> list[type]:
    out = []
    for processor in processors(provider):
        assert isinstance(processor, BatchSpanProcessor)
        out.append(type(processor._batch_processor._exporter))
    return out


# --- provider and resource ----------------------------------------------------------------------------


def test_creates_and_installs_provider_with_resource() -> None:
    provider = configure(
        service_name="svc", resource_attributes={"deployment.environment": "test"}, instrument_threading=False
    )
    assert isinstance(provider, TracerProvider)
    assert trace_api.get_tracer_provider() is provider
    attributes = dict(provider.resource.attributes)
    expected_sdk = dict(Resource.create({}).attributes)
    expected_sdk.pop("service.name")
    assert attributes == {**expected_sdk, "service.name": "svc", "deployment.environment": "test"}
    assert processors(provider) == []


@pytest.mark.parametrize(
    ("argument", "env", "expected"),
    [
        ("arg", {"OTEL_SERVICE_NAME": "otel", "TOOLSPAN_SERVICE_NAME": "ts"}, "arg"),
        (None, {"OTEL_SERVICE_NAME": "otel", "OTEL_RESOURCE_ATTRIBUTES": "service.name=attrs"}, "otel"),
        (None, {"OTEL_RESOURCE_ATTRIBUTES": "service.name=attrs", "TOOLSPAN_SERVICE_NAME": "ts"}, "attrs"),
        (None, {"OTEL_SERVICE_NAME": "otel", "TOOLSPAN_SERVICE_NAME": "ts"}, "otel"),
        (None, {"TOOLSPAN_SERVICE_NAME": "ts"}, "ts"),
        (None, {}, "unknown_service:" + Path(sys.executable).name),
    ],
)
def test_service_name_precedence(
    monkeypatch: pytest.MonkeyPatch, argument: str | None, env: dict[str, str], expected: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    provider: Any = configure(service_name=argument, instrument_threading=False)
    assert provider.resource.attributes["service.name"] == expected


def test_resource_attributes_argument_overrides_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "team=env,region=eu")
    provider: Any = configure(resource_attributes={"team": "arg"}, instrument_threading=False)
    assert provider.resource.attributes["team"] == "arg"
    assert provider.resource.attributes["region"] == "eu"


def test_config_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    configure(
        capture_content=False,
        max_attribute_bytes=1000,
        redact_keys=["ssn"],
        conventions="genai",
        instrument_threading=False,
    )
    current = config.get_config()
    assert current == config.Config(False, 1000, config.DEFAULT_REDACT_KEYS | {"ssn"}, None, "genai")


# --- the application's own provider -------------------------------------------------------------------


def test_app_provider_kept_and_explicit_parts_added(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    app = TracerProvider(resource=Resource.create({"service.name": "app"}))
    extra = SimpleSpanProcessor(InMemorySpanExporter())
    with installed_tracer_provider(app), caplog.at_level(logging.INFO, logger="toolspan._setup.configure"):
        assert configure(instrument_threading=False) is app
        assert processors(app) == []  # env-selected exporters are not added to the app's provider
        result = configure(
            service_name="ignored",
            capture_content=False,
            exporters=["otlp_proto_http"],
            span_processors=[extra],
            instrument_threading=False,
        )
        assert result is app
        assert trace_api.get_tracer_provider() is app
    assert app.resource.attributes["service.name"] == "app"
    assert processors(app)[1] is extra
    assert isinstance(processors(app)[0], BatchSpanProcessor)
    assert type(processors(app)[0]._batch_processor._exporter) is HttpExporter
    assert config.get_config().capture_content is False
    assert "kept the installed TracerProvider (service_name/resource_attributes not applied" in caplog.text
    app.shutdown()


def test_non_sdk_provider_kept(caplog: pytest.LogCaptureFixture) -> None:
    noop = trace_api.NoOpTracerProvider()
    with installed_tracer_provider(noop), caplog.at_level(logging.INFO, logger="toolspan._setup.configure"):
        assert configure(console=True, instrument_threading=False) is noop
    assert "not an SDK TracerProvider" in caplog.text


# --- exporters ----------------------------------------------------------------------------------------


@pytest.fixture
def otlp_endpoint(monkeypatch: pytest.MonkeyPatch) -> str:
    endpoint = f"http://127.0.0.1:{unused_port()}"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    return endpoint


@pytest.mark.usefixtures("otlp_endpoint")
@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, [GrpcExporter]),  # endpoint set, OTEL_TRACES_EXPORTER unset: otlp
        ({"OTEL_TRACES_EXPORTER": "otlp"}, [GrpcExporter]),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, [HttpExporter]),
        (
            {
                "OTEL_TRACES_EXPORTER": "otlp",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
            },
            [GrpcExporter],
        ),
        ({"OTEL_TRACES_EXPORTER": "otlp_proto_http, Console"}, [HttpExporter, ConsoleSpanExporter]),
        (
            {"OTEL_TRACES_EXPORTER": "toolspan_timeline,toolspan_otlp_file"},
            [TimelineJsonExporter, OtlpJsonFileExporter],
        ),
        ({"OTEL_TRACES_EXPORTER": "none"}, []),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, []),
    ],
)
def test_env_selects_exporters(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: list[type]
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert exporter_classes(configure(instrument_threading=False)) == expected


def test_no_endpoint_no_exporter() -> None:
    assert exporter_classes(configure(instrument_threading=False)) == []


def test_unknown_exporter_logged_and_skipped(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin_nope,console")
    with caplog.at_level(logging.WARNING, logger="toolspan._setup.configure"):
        provider = configure(instrument_threading=False)
    assert exporter_classes(provider) == [ConsoleSpanExporter]
    assert "unknown trace exporter 'zipkin_nope'" in caplog.text


def test_explicit_exporters_replace_env_ones(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    memory = InMemorySpanExporter()
    provider = configure(
        exporters=["console", memory], file=tmp_path / "out.jsonl", instrument_threading=False
    )
    assert exporter_classes(provider) == [ConsoleSpanExporter, InMemorySpanExporter, OtlpJsonFileExporter]
    assert processors(provider)[1]._batch_processor._exporter is memory  # type: ignore[attr-defined]
    assert processors(provider)[2]._batch_processor._exporter._path == str(tmp_path / "out.jsonl")  # type: ignore[attr-defined]


def test_spans_reach_the_exporter_through_the_batch_processor() -> None:
    memory = InMemorySpanExporter()
    provider: Any = configure(exporters=[memory], instrument_threading=False)
    with trace_api.get_tracer("t").start_as_current_span("work"):
        pass
    provider.force_flush()
    assert [span.name for span in memory.get_finished_spans()] == ["work"]


def test_export_queue_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    provider = configure(console=True, instrument_threading=False)
    assert processors(provider)[0]._batch_processor._queue.maxlen == 2048  # type: ignore[attr-defined]
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "100")
    other = configure(exporters=[InMemorySpanExporter()], instrument_threading=False)
    assert processors(other)[1]._batch_processor._queue.maxlen == 100  # type: ignore[attr-defined]


@pytest.mark.usefixtures("otlp_endpoint")
def test_idempotent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp,console")
    memory = InMemorySpanExporter()
    processor = SimpleSpanProcessor(InMemorySpanExporter())
    arguments: dict[str, Any] = {
        "console": True,
        "file": tmp_path / "t.jsonl",
        "span_processors": [processor],
        "instrument_threading": False,
    }
    first = configure(**arguments)
    assert [type(p._batch_processor._exporter) for p in processors(first)[:3]] == [  # type: ignore[attr-defined]
        GrpcExporter,
        ConsoleSpanExporter,
        OtlpJsonFileExporter,
    ]
    assert processors(first)[3] is processor
    assert configure(**arguments) is first
    assert len(processors(first)) == 4
    configure(exporters=[memory], instrument_threading=False)
    configure(exporters=[memory, "console"], instrument_threading=False)
    assert len(processors(first)) == 5


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"exporters": "otlp"}, TypeError),
        ({"exporters": [42]}, TypeError),
        ({"span_processors": [object()]}, TypeError),
        ({"console": "yes"}, TypeError),
        ({"service_name": 3}, TypeError),
        ({"file": 3}, TypeError),
        ({"resource_attributes": ["a"]}, TypeError),
        ({"max_attribute_bytes": 10}, ValueError),
        ({"max_attribute_bytes": "big"}, TypeError),
        ({"capture_content": "no"}, TypeError),
        ({"redact_keys": "ssn"}, TypeError),
        ({"redact": "nope"}, TypeError),
        ({"conventions": "phoenix"}, ValueError),
    ],
)
def test_bad_arguments_raise_and_change_nothing(arguments: dict[str, Any], error: type[Exception]) -> None:
    before = config._current
    with pytest.raises(error):
        configure(**arguments)
    assert isinstance(trace_api.get_tracer_provider(), trace_api.ProxyTracerProvider)
    assert config._current is before


# --- threading ----------------------------------------------------------------------------------------


@pytest.fixture
def threading_instrumentation() -> Iterator[None]:
    instrumentor = ThreadingInstrumentor()
    was_instrumented = instrumentor.is_instrumented_by_opentelemetry
    if was_instrumented:
        instrumentor.uninstrument()
    _setup._threading_warned = False
    yield
    if instrumentor.is_instrumented_by_opentelemetry and not was_instrumented:
        instrumentor.uninstrument()
    elif was_instrumented and not instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.instrument()


def run_parent_and_child(tracer: trace_api.Tracer) -> tuple[Any, Any]:
    def child() -> None:
        with tracer.start_as_current_span("child"):
            pass

    with tracer.start_as_current_span("parent") as parent, ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(child).result()
    return parent, child


@pytest.mark.usefixtures("threading_instrumentation")
def test_thread_pool_keeps_parent_after_configure() -> None:
    memory = InMemorySpanExporter()
    before = TracerProvider()
    before.add_span_processor(SimpleSpanProcessor(memory))
    run_parent_and_child(before.get_tracer("t"))  # not instrumented yet: the worker starts a new trace
    assert next(s for s in memory.get_finished_spans() if s.name == "child").parent is None
    memory.clear()

    configure(span_processors=[SimpleSpanProcessor(memory)])
    tracer = trace_api.get_tracer("t")
    parent, _ = run_parent_and_child(tracer)

    async def in_executor() -> None:
        with tracer.start_as_current_span("async-parent"):
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: tracer.start_span("exec-child").end()
            )

    asyncio.run(in_executor())
    spans = {span.name: span for span in memory.get_finished_spans()}
    assert spans["child"].parent is not None
    assert spans["child"].parent.span_id == parent.get_span_context().span_id
    assert spans["exec-child"].parent is not None
    assert spans["exec-child"].parent.span_id == spans["async-parent"].context.span_id


@pytest.mark.usefixtures("threading_instrumentation")
def test_thread_pool_keeps_parent_with_app_provider() -> None:
    memory = InMemorySpanExporter()
    app = TracerProvider()
    app.add_span_processor(SimpleSpanProcessor(memory))
    with installed_tracer_provider(app):
        assert configure() is app
        parent, _ = run_parent_and_child(trace_api.get_tracer("t"))
    child = next(span for span in memory.get_finished_spans() if span.name == "child")
    assert child.parent is not None
    assert child.parent.span_id == parent.get_span_context().span_id
    app.shutdown()


@pytest.mark.usefixtures("threading_instrumentation")
def test_broken_threading_install_warns_once_and_configure_still_works(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.instrumentation.threading", None)
    with caplog.at_level(logging.WARNING, logger="toolspan._setup.configure"):
        configure()
        assert instrument_threads() is False
        configure()
    assert [r.getMessage() for r in caplog.records] == [
        "toolspan: opentelemetry-instrumentation-threading cannot be imported, so tools run in "
        "threads start new traces; reinstall toolspan"
    ]


def test_threading_instrumentation_is_a_core_dependency() -> None:
    """``pip install toolspan`` alone brings it: required with no extra marker; the extra stays, empty."""
    requires = metadata.requires("toolspan") or []
    core = [r for r in requires if "extra ==" not in r]
    assert any(r.startswith("opentelemetry-instrumentation-threading") for r in core)
    assert "threading" in (metadata.metadata("toolspan").get_all("Provides-Extra") or [])
    assert not [r for r in requires if 'extra == "threading"' in r]


@pytest.mark.usefixtures("threading_instrumentation")
def test_configure_turns_threads_on_without_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        configure()
        configure()
    assert ThreadingInstrumentor().is_instrumented_by_opentelemetry
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


@pytest.mark.usefixtures("threading_instrumentation")
def test_configure_can_leave_threads_alone() -> None:
    configure(instrument_threading=False)
    assert not ThreadingInstrumentor().is_instrumented_by_opentelemetry


@pytest.mark.usefixtures("threading_instrumentation")
def test_instrument_threads_without_configure_keeps_parents_in_thread_pool_and_executor(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An application with its own provider that never calls configure(): one call, every thread kind."""
    memory = InMemorySpanExporter()
    app = TracerProvider()
    app.add_span_processor(SimpleSpanProcessor(memory))
    tracer = app.get_tracer("t")

    def child(name: str) -> None:
        tracer.start_span(name).end()

    async def in_executor() -> None:
        await asyncio.get_running_loop().run_in_executor(None, child, "executor")

    with caplog.at_level(logging.DEBUG):
        assert instrument_threads() is True
        assert instrument_threads() is True  # idempotent
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    with tracer.start_as_current_span("parent") as parent:
        thread = threading.Thread(target=child, args=("thread",))
        thread.start()
        thread.join()
        with ThreadPoolExecutor(max_workers=2) as pool:
            pool.submit(child, "pool").result()
        asyncio.run(in_executor())
    finished = {span.name: span for span in memory.get_finished_spans()}
    assert sorted(finished) == ["executor", "parent", "pool", "thread"]
    parent_id = parent.get_span_context().span_id
    for name in ("thread", "pool"):
        assert finished[name].parent is not None, name
        assert finished[name].parent.span_id == parent_id, name
    # asyncio.run copies the context into its task, so the executor's parent is the same span.
    assert finished["executor"].parent is not None
    assert finished["executor"].parent.span_id == parent_id
    app.shutdown()


@pytest.mark.usefixtures("threading_instrumentation")
def test_without_the_instrumentation_a_plain_thread_starts_a_new_trace() -> None:
    """The control for the test above: the parent comes from the instrumentation, not from Python."""
    memory = InMemorySpanExporter()
    app = TracerProvider()
    app.add_span_processor(SimpleSpanProcessor(memory))
    tracer = app.get_tracer("t")
    with tracer.start_as_current_span("parent"):
        thread = threading.Thread(target=lambda: tracer.start_span("thread").end())
        thread.start()
        thread.join()
    (orphan,) = [span for span in memory.get_finished_spans() if span.name == "thread"]
    assert orphan.parent is None
    app.shutdown()


@pytest.mark.parametrize(
    ("env", "queue", "batch"),
    [
        ({"OTEL_BSP_MAX_QUEUE_SIZE": "0"}, 2048, 512),
        ({"OTEL_BSP_MAX_QUEUE_SIZE": "-5"}, 2048, 512),
        ({"OTEL_BSP_MAX_QUEUE_SIZE": "many"}, 2048, 512),
        ({"OTEL_BSP_MAX_QUEUE_SIZE": "100"}, 100, 100),
        ({"OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "500"}, 100, 100),
        ({"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "0"}, 2048, 512),
        ({"OTEL_BSP_SCHEDULE_DELAY": "-1"}, 2048, 512),
    ],
)
def test_bad_batch_settings_fall_back_with_one_warning_and_spans_still_arrive(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    env: dict[str, str],
    queue: int,
    batch: int,
) -> None:
    for name in ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    memory = InMemorySpanExporter()
    with caplog.at_level(logging.WARNING):
        provider: Any = configure(exporters=[memory], instrument_threading=False)
    [processor] = processors(provider)
    assert isinstance(processor, BatchSpanProcessor)
    inner = processor._batch_processor
    assert (inner._queue.maxlen, inner._max_export_batch_size) == (queue, batch)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "OTEL_BSP_" in warnings[0]
    if env != {"OTEL_BSP_MAX_QUEUE_SIZE": "many"}:  # the SDK itself warns and uses its default
        assert warnings[0].startswith("toolspan: OTEL_BSP_* settings refused by the batch span processor")
        assert warnings[0].endswith(
            f"falling back to a queue of {queue} spans exported in batches of at most {batch}"
        )
    with trace_api.get_tracer("t").start_as_current_span("work"):
        pass
    provider.force_flush()
    assert [span.name for span in memory.get_finished_spans()] == ["work"]
