"""The tracer toolspan's spans come from (``_instrument/tracer.py``): the environment's tracer provider on the
fast path, a tracer the SDK's configurator disabled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import TracerProvider, _TracerConfig
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolspan
from toolspan.testing import installed_tracer_provider


@pytest.mark.processes
def test_a_provider_named_by_the_environment_traces_tools_from_their_first_call() -> None:
    code = (
        "import json, toolspan\n"
        "from opentelemetry import trace\n"
        "@toolspan.tool\n"
        "def f() -> str:\n"
        "    return toolspan.current_execution_id() or ''\n"
        "first = f()\n"
        "print(json.dumps([first, type(trace.get_tracer_provider()).__name__]))\n"
    )
    env = {**os.environ, "OTEL_PYTHON_TRACER_PROVIDER": "sdk_tracer_provider"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    first, provider = json.loads(out.stdout)
    assert provider == "TracerProvider"
    assert first.startswith("exec_")  # the very first call is traced


def test_a_tracer_disabled_by_the_sdk_configurator_never_lends_its_parents_ids() -> None:
    def only_the_app(scope: Any) -> _TracerConfig:
        return _TracerConfig(is_enabled=scope.name != "toolspan")

    exporter = InMemorySpanExporter()
    provider = TracerProvider(_tracer_configurator=only_the_app)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    seen: dict[str, Any] = {}

    @toolspan.tool
    def lookup() -> str:
        seen["execution_id"] = toolspan.current_execution_id()
        with toolspan.plan("sub") as run:
            seen["plan_id"] = run.execution_id
        return "ok"

    with installed_tracer_provider(provider):
        app = trace_api.get_tracer("the-app")
        with app.start_as_current_span("request") as parent:
            assert lookup() == "ok"
            parent_exec = "exec_" + format(parent.get_span_context().span_id, "016x")
    assert seen["execution_id"] != parent_exec
    assert seen["execution_id"] is None
    assert seen["plan_id"] is None
    assert [s.name for s in exporter.get_finished_spans()] == ["request"]
