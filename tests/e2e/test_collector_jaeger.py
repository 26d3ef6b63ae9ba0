"""The configurations of ``collector-config/`` on the real OpenTelemetry Collector, in front of a real Jaeger.

- Every configuration file passes the Collector's own ``validate`` (and a broken one does not).
- ``jaeger.yaml``: an application with ``@tool`` spans -> the Collector -> Jaeger; Jaeger's API v3 gives back
  exactly the spans the application's SDK exported (its own OTLP file of the same run).
- ``fanout-file.yaml`` (its Tempo exporter taken out: Tempo cannot run here): the file export holds exactly
  what the SDK exported, Jaeger's v3 exactly that, and Jaeger's v1 exactly that under the documented v1
  rule (``losses.jaeger_v1``); the difference is measured kind by kind.
- ``loadbalancing.yaml`` in front of two real ``toolspan serve`` replicas: every trace whole on one replica.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.losses import ARRAYS, LINK_ATTRS, SCHEMA_URL, SUB_US, jaeger_v1, jaeger_v3, losses
from tests.e2e.otel_stack import CONFIG_DIR, Collector, Jaeger, app_env, validate
from tests.support.server import running_server, wait_for
from toolspan.bridge.model import Span
from toolspan.bridge.readers import read_spans

pytestmark = [pytest.mark.e2e, pytest.mark.processes]

APP = Path(__file__).with_name("shipping_app.py")
CONFIGS = ["jaeger.yaml", "fanout-file.yaml", "jaeger-and-tempo.yaml", "loadbalancing.yaml", "tempo.yaml"]
# The pipelines without what cannot run here: Tempo (AGPL, not in the project).
WITHOUT_TEMPO = {
    "fanout-file.yaml": ["otlp_grpc/jaeger", "file/json", "debug"],
    "loadbalancing.yaml": ["loadbalancing/toolspan", "otlp_grpc/jaeger", "debug"],
}
RUN_SPANS = (
    8  # shipping_app.py run: spans of the agent's trace (the linked ingest span is a trace of its own)
)


def run_app(env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(APP), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def normal(spans: list[Span]) -> list[Span]:
    return sorted((dataclasses.replace(s, origin="") for s in spans), key=lambda s: (s.trace_id, s.span_id))


def of_trace(spans: list[Span], trace_id: str) -> list[Span]:
    return [s for s in spans if s.trace_id == trace_id]


def read(source: Any) -> list[Span]:
    spans, report = read_spans(source)
    assert report.issues == []
    return spans


def wait_for_file_spans(path: Path, trace_id: str, count: int) -> list[Span]:
    """The file export's spans of ``trace_id`` once all ``count`` are there (flushed every 1 s)."""

    def ready() -> list[Span] | None:
        if not path.exists():
            return None
        spans, _ = read_spans(str(path), lenient=True)
        mine = of_trace(spans, trace_id)
        return mine if len(mine) >= count else None

    spans: list[Span] = wait_for(ready, f"{count} spans of {trace_id} in {path.name}", timeout=60)
    return spans


@pytest.mark.parametrize("name", CONFIGS)
def test_every_collector_config_passes_the_real_collectors_validate(
    go_programs: tuple[Path, Path], name: str
) -> None:
    done = validate(go_programs[0], CONFIG_DIR / name)
    assert (done.returncode, done.stderr) == (0, "")


def test_validate_refuses_a_pipeline_naming_an_exporter_it_does_not_define(
    go_programs: tuple[Path, Path], tmp_path: Path
) -> None:
    text = (CONFIG_DIR / "jaeger.yaml").read_text("utf-8")
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        text.replace("exporters: [otlp_grpc/jaeger, debug]", "exporters: [otlp_grpc/jaeger, nope]")
    )
    done = validate(go_programs[0], broken)
    assert done.returncode == 1
    assert 'references exporter "nope" which is not configured' in done.stderr


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_jaeger_yaml_ships_every_span_of_a_run_to_jaeger_unchanged(
    go_programs: tuple[Path, Path], jaeger: Jaeger, tmp_path: Path, protocol: str
) -> None:
    collector = Collector(
        go_programs[0], CONFIG_DIR / "jaeger.yaml", tmp_path, {"JAEGER_ENDPOINT": jaeger.otlp_grpc}
    )
    try:
        sdk_file = tmp_path / "sdk.jsonl"
        env = app_env(
            collector.endpoint(protocol),
            protocol,
            OTEL_TRACES_EXPORTER="otlp,toolspan_otlp_file",
            TOOLSPAN_OTLP_FILE=str(sdk_file),
            TOOLSPAN_MAX_ATTRIBUTE_BYTES="200000",
        )
        result = run_app(env, "run")
        trace_id = result["trace_id"]
        sent = of_trace(read(str(sdk_file)), trace_id)
        assert len(sent) == RUN_SPANS
        jaeger.wait_for_trace(trace_id, RUN_SPANS)
        got = read(jaeger.trace_v3(trace_id))
        assert normal(got) == normal([jaeger_v3(s) for s in sent])
        link = next(s for s in got if s.links).links[0]
        assert (link.trace_id, link.attributes) == (result["link_trace_id"], {"link.reason": "source"})
    finally:
        collector.stop()


def test_fanout_file_yaml_writes_the_file_and_jaeger_gives_it_back_with_only_the_documented_v1_losses(
    go_programs: tuple[Path, Path], jaeger: Jaeger, tmp_path: Path
) -> None:
    out = tmp_path / "collector-output" / "traces.jsonl"
    out.parent.mkdir()  # the file exporter writes into a directory that exists (as the README says)
    collector = Collector(
        go_programs[0],
        CONFIG_DIR / "fanout-file.yaml",
        tmp_path,
        {"JAEGER_ENDPOINT": jaeger.otlp_grpc, "TRACES_FILE": str(out)},
        exporters=WITHOUT_TEMPO["fanout-file.yaml"],
    )
    try:
        sdk_file = tmp_path / "sdk.jsonl"
        env = app_env(
            collector.endpoint("grpc"),
            "grpc",
            OTEL_TRACES_EXPORTER="otlp,toolspan_otlp_file",
            TOOLSPAN_OTLP_FILE=str(sdk_file),
            TOOLSPAN_MAX_ATTRIBUTE_BYTES="200000",
            OTEL_RESOURCE_ATTRIBUTES="deployment.environment=e2e,service.version=1.2.3",
        )
        trace_id = run_app(env, "run")["trace_id"]
        sent = of_trace(read(str(sdk_file)), trace_id)
        exported = wait_for_file_spans(out, trace_id, RUN_SPANS)
        assert normal(exported) == normal(sent)
        jaeger.wait_for_trace(trace_id, RUN_SPANS)
        v3 = read(jaeger.trace_v3(trace_id))
        v1 = read(jaeger.trace_v1(trace_id))
    finally:
        collector.stop()
    assert normal(v3) == normal([jaeger_v3(s) for s in exported])
    assert losses(exported, v3) == {SCHEMA_URL: len(exported)}
    assert normal(v1) == normal([jaeger_v1(s) for s in exported])
    measured = losses(exported, v1)
    # Every span's end (or start) moves below the microsecond; the search tool's two list attributes
    # become JSON text; the agent's link to the ingest trace keeps its ids but loses its attribute.
    assert set(measured) == {SUB_US, ARRAYS, LINK_ATTRS, SCHEMA_URL}
    assert (measured[ARRAYS], measured[LINK_ATTRS]) == (1, 1)
    long_value = next(s for s in v1 if s.name == "execute_tool read_file").attributes[
        "gen_ai.tool.call.result"
    ]
    assert len(long_value) > 60_000  # long values kept whole by both APIs


def test_loadbalancing_yaml_keeps_each_trace_whole_on_one_of_two_toolspan_serve_replicas(
    go_programs: tuple[Path, Path], jaeger: Jaeger, tmp_path: Path
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    with (
        running_server(one, db=one / "toolspan.db") as first,
        running_server(two, db=two / "toolspan.db") as second,
    ):
        collector = Collector(
            go_programs[0],
            CONFIG_DIR / "loadbalancing.yaml",
            tmp_path,
            {
                "TOOLSPAN_REPLICA_1": f"127.0.0.1:{first.grpc_port}",
                "TOOLSPAN_REPLICA_2": f"127.0.0.1:{second.grpc_port}",
                "JAEGER_ENDPOINT": jaeger.otlp_grpc,
            },
            exporters=WITHOUT_TEMPO["loadbalancing.yaml"],
        )
        try:
            runs = 24
            trace_ids = run_app(app_env(collector.endpoint("grpc"), "grpc"), "runs", str(runs))["trace_ids"]
            assert len(set(trace_ids)) == runs
            per_trace = 3  # the worker agent, search, fetch
            wait_for(
                lambda: first.counts()["spans"] + second.counts()["spans"] == runs * per_trace,
                "every span on a replica",
                timeout=60,
            )
            for trace_id in trace_ids:
                jaeger.wait_for_trace(trace_id, per_trace)
        finally:
            collector.stop()
        held = []
        for server in (first, second):
            rows = server.query("SELECT trace_id, COUNT(*) FROM spans GROUP BY trace_id")
            held.append({str(tid): n for tid, n in rows})
    assert set(held[0]).isdisjoint(held[1])  # no trace split between the replicas
    assert sorted([*held[0], *held[1]]) == sorted(trace_ids)
    assert set(held[0].values()) | set(held[1].values()) == {per_trace}  # each trace whole
    assert held[0]
    assert held[1]
