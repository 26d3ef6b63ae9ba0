"""Fixes that came with the layered house: the environment's tracer provider on the fast path, a tracer the
SDK's configurator disabled, ``configure()`` without a policy, one bearer-token parser for HTTP and gRPC."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import TracerProvider, _TracerConfig
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolspan
from toolspan._decisions import chain
from toolspan.server._http.auth import bearer_token, token_matches
from toolspan.testing import capture_spans, installed_tracer_provider


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


def test_configure_without_a_policy_removes_an_earlier_one(
    tmp_path: Path, fresh_config: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLSPAN_POLICY", raising=False)
    policy = tmp_path / "p.json"
    policy.write_text(
        json.dumps({"id": "p", "version": 1, "rules": [{"id": "x", "kind": "tools", "deny": "*"}]})
    )
    try:
        with capture_spans():  # the application's provider: configure() installs none, none is left behind
            toolspan.configure(policy=policy, instrument_threading=False)
            assert chain.GUARD[0] is not None
            assert chain.ACTIVE[0] == 1
            toolspan.configure(instrument_threading=False)
            assert chain.GUARD[0] is None
            assert chain.ACTIVE[0] == 0
    finally:
        chain.install_guard(None)


@pytest.mark.parametrize(
    ("header", "token"),
    [
        (b"Bearer s3cret", b"s3cret"),
        (b"bearer s3cret", b"s3cret"),
        (b"BEARER s3cret", b"s3cret"),
        (b"  Bearer   s3cret  ", b"s3cret"),
        ("Bearer s3cret", b"s3cret"),  # gRPC metadata arrives as text
        (b"Bearer S3CRET", b"S3CRET"),  # the token keeps its case
        (b"Basic czNjcmV0", b""),
        (b"Bearers3cret", b""),
        (b"", b""),
        ("Bearer s\u00e9cret", "s\u00e9cret".encode("latin-1")),
        ("Bearer \u2603", b"?"),  # outside Latin-1: never the token
    ],
)
def test_one_bearer_parser_for_http_and_grpc(header: bytes | str, token: bytes) -> None:
    assert bearer_token(header) == token
    assert token_matches(bearer_token(header), b"s3cret") is (token == b"s3cret")
    assert not token_matches(b"", b"")


def test_shortcuts_off_selects_every_public_fallback() -> None:
    code = (
        "import json\n"
        "from toolspan._util import otel_internals as o\n"
        "from toolspan._capture import encode\n"
        "print(json.dumps([o.SHORTCUTS, o.PROVIDER_SLOT_OK, o.CONTEXT_KEY_OK,\n"
        "    o.check_attribute_store() is None, o.tracing_on is o._public_tracing_on,\n"
        "    encode.ENCODE.__qualname__]))\n"
    )
    env = {**os.environ, "TOOLSPAN_OTEL_SHORTCUTS": "off"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [False, False, False, True, True, "JSONEncoder.encode"]
