"""The Collector configurations and the compose files in collector-config/, and the backends' own configs
(Tempo's and Jaeger's, read by those programs, not by the Collector) in backend-config/."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.paths import REPO

CONFIG_DIR = REPO / "collector-config"
BACKEND_DIR = REPO / "backend-config"
BACKEND_CONFIGS = ["jaeger.yaml", "tempo.yaml"]
COLLECTOR_CONFIGS = [
    "fanout-file.yaml",
    "jaeger-and-tempo.yaml",
    "jaeger.yaml",
    "loadbalancing.yaml",
    "tempo.yaml",
]
SECTIONS = ("receivers", "processors", "exporters")
# Current exporter type names (collector >= 0.144): `otlp` / `otlphttp` are deprecated aliases of the first
# two, `logging` was replaced by `debug` long ago.
CURRENT_EXPORTERS = {"otlp_grpc", "otlp_http", "debug", "file", "loadbalancing"}
DEPRECATED_EXPORTERS = {"otlp", "otlphttp", "logging"}
ENV_REF = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}")
ANY_REF = re.compile(r"\$\{[^}]*\}")
COMPOSE_SERVICES = {"jaeger", "tempo"}


def _load(name: str, folder: Path = CONFIG_DIR) -> Any:
    return yaml.safe_load((folder / name).read_text(encoding="utf-8"))


def _resolve(value: str) -> str:
    """A config string with every ``${env:NAME:-default}`` replaced by its default (what runs unset)."""
    return ENV_REF.sub(lambda m: m.group(3) or "", value)


def _port(endpoint: str) -> int:
    return int(_resolve(endpoint).rstrip("/").rsplit(":", 1)[1])


def _host(endpoint: str) -> str:
    text = _resolve(endpoint).split("://", 1)[-1]
    return text.rsplit(":", 1)[0]


def _type(component_id: str) -> str:
    return component_id.split("/", 1)[0]


@pytest.fixture(params=COLLECTOR_CONFIGS)
def config(request: pytest.FixtureRequest) -> dict[str, Any]:
    doc = _load(request.param)
    assert isinstance(doc, dict)
    return doc


def test_the_folder_holds_exactly_the_documented_files() -> None:
    yamls = sorted(p.name for p in CONFIG_DIR.glob("*.yaml"))
    assert yamls == sorted([*COLLECTOR_CONFIGS, "compose.yaml", "replicas-compose.yaml"])
    collector = sorted(n for n in yamls if "service" in (_load(n) or {}))
    assert collector == sorted(COLLECTOR_CONFIGS)
    assert (CONFIG_DIR / "README.md").is_file()


def test_the_backends_own_configs_are_apart_and_each_names_the_program_that_reads_it() -> None:
    assert sorted(p.name for p in BACKEND_DIR.glob("*.yaml")) == BACKEND_CONFIGS
    for name, program in (("jaeger.yaml", "jaeger"), ("tempo.yaml", "tempo")):
        first = (BACKEND_DIR / name).read_text(encoding="utf-8").splitlines()[0]
        assert f"own config (read by the {program} binary, not by the Collector" in first, name


def test_pipelines_reference_only_defined_components(config: dict[str, Any]) -> None:
    pipelines = config["service"]["pipelines"]
    assert pipelines, "no pipeline"
    for name, pipeline in pipelines.items():
        assert _type(name) == "traces", name
        assert set(pipeline) <= set(SECTIONS), pipeline
        assert pipeline["receivers"], name
        assert pipeline["exporters"], name
        for section in SECTIONS:
            defined = set(config.get(section) or {})
            for component in pipeline.get(section, []):
                assert component in defined, f"{name}: {section} {component!r} is not defined"


def test_every_defined_component_is_used(config: dict[str, Any]) -> None:
    for section in SECTIONS:
        used = {c for p in config["service"]["pipelines"].values() for c in p.get(section, [])}
        assert set(config.get(section) or {}) == used, section


def test_memory_limiter_first_and_batch_last(config: dict[str, Any]) -> None:
    for name, pipeline in config["service"]["pipelines"].items():
        processors = [_type(p) for p in pipeline["processors"]]
        assert processors[0] == "memory_limiter", name
        assert processors[-1] == "batch", name
    limiter = config["processors"]["memory_limiter"]
    assert "check_interval" in limiter
    assert "limit_mib" in limiter or "limit_percentage" in limiter


def test_otlp_receiver_on_the_standard_ports(config: dict[str, Any]) -> None:
    assert set(config["receivers"]) == {"otlp"}
    protocols = config["receivers"]["otlp"]["protocols"]
    assert set(protocols) == {"grpc", "http"}
    assert _port(protocols["grpc"]["endpoint"]) == 4317
    assert _port(protocols["http"]["endpoint"]) == 4318
    for proto in protocols.values():
        assert _host(proto["endpoint"]) in ("0.0.0.0", "127.0.0.1")


def test_exporters_use_current_names_and_standard_ports(config: dict[str, Any]) -> None:
    for component, value in config["exporters"].items():
        kind = _type(component)
        assert kind not in DEPRECATED_EXPORTERS, component
        assert kind in CURRENT_EXPORTERS, component
        settings = value or {}
        if kind == "otlp_grpc":
            endpoint = settings["endpoint"]
            assert "://" not in _resolve(endpoint), "a gRPC endpoint is host:port"
            assert _port(endpoint) == 4317, component
            assert _host(endpoint) in COMPOSE_SERVICES, component
            assert settings["tls"]["insecure"] is True, component
        elif kind == "otlp_http":
            endpoint = _resolve(settings["endpoint"])
            assert endpoint.startswith("http://"), component
            assert _port(endpoint) == 4318, component
            assert _host(endpoint) in COMPOSE_SERVICES, component
        elif kind == "debug":
            assert settings.get("verbosity", "basic") in ("basic", "normal", "detailed")
        if kind in ("otlp_grpc", "otlp_http"):
            assert settings["retry_on_failure"]["enabled"] is True
            assert settings["sending_queue"]["queue_size"] > 0


def test_file_exporter_writes_json_lines_the_bridge_reads() -> None:
    config = _load("fanout-file.yaml")
    files = {k: v for k, v in config["exporters"].items() if _type(k) == "file"}
    assert list(files) == ["file/json"]
    settings = files["file/json"]
    assert settings["format"] == "json"
    assert _resolve(settings["path"]).endswith(".jsonl")
    # The file exporter refuses append together with rotation or compression.
    assert not (settings.get("append") and ("rotation" in settings or "compression" in settings))
    exporters = {_type(e) for e in config["service"]["pipelines"]["traces"]["exporters"]}
    assert exporters == {"otlp_grpc", "file", "debug"}
    targets = {_host(v["endpoint"]) for k, v in config["exporters"].items() if _type(k) == "otlp_grpc"}
    assert targets == {"jaeger", "tempo"}


@pytest.mark.parametrize(
    ("name", "backends"),
    [
        ("jaeger.yaml", {"jaeger"}),
        ("tempo.yaml", {"tempo"}),
        ("jaeger-and-tempo.yaml", {"jaeger", "tempo"}),
        ("fanout-file.yaml", {"jaeger", "tempo"}),
        ("loadbalancing.yaml", {"jaeger", "tempo"}),
    ],
)
def test_each_config_sends_to_its_backends(name: str, backends: set[str]) -> None:
    config = _load(name)
    used = config["service"]["pipelines"]["traces"]["exporters"]
    hosts = {_host(config["exporters"][e]["endpoint"]) for e in used if _type(e).startswith("otlp")}
    assert hosts == backends
    assert "debug" in used


def test_loadbalancing_routes_each_trace_to_one_toolspan_replica_over_otlp_grpc() -> None:
    config = _load("loadbalancing.yaml")
    balancer = config["exporters"]["loadbalancing/toolspan"]
    assert balancer["routing_key"] == "traceID"
    otlp = balancer["protocol"]["otlp"]
    assert otlp["tls"]["insecure"] is True
    assert otlp["retry_on_failure"]["enabled"] is True
    assert otlp["sending_queue"]["queue_size"] > 0
    replicas = [_resolve(h) for h in balancer["resolver"]["static"]["hostnames"]]
    assert replicas == ["toolspan-1:4317", "toolspan-2:4317"]  # `toolspan serve`'s default gRPC port
    assert "loadbalancing/toolspan" in config["service"]["pipelines"]["traces"]["exporters"]
    # Pending records of running tools must not wait long in the batch processor.
    assert config["processors"]["batch"]["timeout"] == "200ms"


@pytest.mark.parametrize(
    "path",
    [
        *(CONFIG_DIR / n for n in [*COLLECTOR_CONFIGS, "compose.yaml", "replicas-compose.yaml"]),
        *(BACKEND_DIR / n for n in BACKEND_CONFIGS),
    ],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_every_variable_has_a_default(path: Path) -> None:
    name = path.name
    text = "\n".join(
        line for line in path.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("#")
    )
    for ref in ANY_REF.findall(text):
        if name.endswith("compose.yaml"):
            assert re.fullmatch(r"\$\{[A-Z_]+:-[^}]+\}", ref), ref
        else:
            match = ENV_REF.fullmatch(ref)
            assert match is not None, ref
            assert match.group(3), ref


def test_tempo_server_config() -> None:
    tempo = _load("tempo.yaml", BACKEND_DIR)
    assert tempo["server"]["http_listen_port"] == 3200
    protocols = tempo["distributor"]["receivers"]["otlp"]["protocols"]
    # Tempo's receivers default to localhost: inside a container they must listen on every interface.
    assert protocols["grpc"]["endpoint"] == "0.0.0.0:4317"
    assert protocols["http"]["endpoint"] == "0.0.0.0:4318"
    assert tempo["storage"]["trace"]["backend"] == "local"


def _volumes(service: dict[str, Any]) -> dict[str, str]:
    """target -> source of a service's short-syntax volumes (sources resolved to their defaults)."""
    out = {}
    for spec in service.get("volumes", []):
        source, target = re.sub(r"\$\{[A-Z_]+:-([^}]+)\}", r"\1", spec).split(":")[:2]
        out[target] = source
    return out


def test_compose_mounts_configs_that_exist() -> None:
    compose = _load("compose.yaml")
    services = compose["services"]
    assert {"collector", "jaeger", "tempo"} <= set(services)
    collector = services["collector"]
    mounts = _volumes(collector)
    config_target = "/etc/otelcol-contrib/config.yaml"
    assert collector["command"] == [f"--config={config_target}"]
    assert mounts[config_target] == "./fanout-file.yaml"
    assert mounts["/data"] == "./collector-output"
    assert collector["environment"]["TRACES_FILE"].startswith("/data/")
    tempo = services["tempo"]
    assert tempo["command"] == ["-config.file=/etc/tempo.yaml"]
    assert _volumes(tempo)["/etc/tempo.yaml"] == "../backend-config/tempo.yaml"
    for service in services.values():
        for target, source in _volumes(service).items():
            if source.startswith(".") and source.endswith(".yaml"):
                assert (CONFIG_DIR / source).is_file(), f"{target}: {source} does not exist"
    # Every alternative the compose header offers exists too.
    header = (CONFIG_DIR / "compose.yaml").read_text(encoding="utf-8")
    for name in re.findall(r"COLLECTOR_CONFIG=(\S+)", header):
        assert (CONFIG_DIR / name).is_file(), name


def test_compose_publishes_standard_ports_on_loopback_only() -> None:
    services = _load("compose.yaml")["services"]
    published: dict[str, set[int]] = {}
    for name, service in services.items():
        for spec in service.get("ports", []):
            host, host_port, container_port = str(spec).split(":")
            assert host == "127.0.0.1", spec
            assert host_port == container_port, spec
            published.setdefault(name, set()).add(int(host_port))
    assert published == {"collector": {4317, 4318}, "jaeger": {16686}, "tempo": {3200}}
    for name, service in services.items():
        image = service["image"]
        tag = image.rsplit(":", 1)[-1]
        assert ":" in image, (name, image)
        assert re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", tag), (name, image)  # pinned, not "latest"
    assert services["collector"]["image"].startswith("otel/opentelemetry-collector-contrib:")
    assert services["jaeger"]["image"].startswith("jaegertracing/jaeger:2.")


def test_readme_documents_every_config_and_the_guide_the_queries() -> None:
    readme = (CONFIG_DIR / "README.md").read_text(encoding="utf-8")
    for name in COLLECTOR_CONFIGS:
        assert f"otelcol-contrib --config collector-config/{name}" in readme, name
    for text in ("docker compose up", "127.0.0.1", "toolspan convert", "toolspan fetch", "docs/shipping.md"):
        assert text in readme, text
    guide = (CONFIG_DIR.parent / "docs" / "shipping.md").read_text(encoding="utf-8")
    for text in (
        "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317",
        "OTEL_SERVICE_NAME",
        '{ span.gen_ai.operation.name = "execute_tool" && status = error }',
        "span.toolspan.execution_id",
        "gen_ai.tool.name=",
        "error=true",
        "toolspan convert",
        "toolspan fetch",
        "toolspan find",
    ):
        assert text in guide, text
    for name in [*COLLECTOR_CONFIGS, "compose.yaml", "replicas-compose.yaml", "../backend-config/tempo.yaml"]:
        assert f"| `{name}` |" in readme, name  # each file's row says what cannot run in the tests


def test_the_replicas_compose_shares_one_postgresql_between_the_replicas_the_collector_balances() -> None:
    compose = _load("replicas-compose.yaml")
    services = compose["services"]
    replicas = sorted(n for n in services if n.startswith("toolspan-"))
    assert replicas == ["toolspan-1", "toolspan-2"]
    urls = {_resolve_compose(services[n]["environment"]["TOOLSPAN_DATABASE_URL"]) for n in replicas}
    assert urls == {"postgresql://toolspan:toolspan@postgres:5432/toolspan"}  # one store for all
    for name in replicas:
        service = services[name]
        assert "[server,postgres]" in " ".join(service["command"])
        assert "--tempo http://tempo:3200" in " ".join(service["command"])
        assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert _volumes(service)["/src"] == ".."
    # The collector balances traces over exactly these replicas, on their OTLP/gRPC port.
    collector = services["collector"]
    assert _volumes(collector)["/etc/otelcol-contrib/config.yaml"] == "./loadbalancing.yaml"
    balancer = _load("loadbalancing.yaml")["exporters"]["loadbalancing/toolspan"]
    assert [_resolve(h) for h in balancer["resolver"]["static"]["hostnames"]] == [
        f"{n}:4317" for n in replicas
    ]
    assert {"postgres", "tempo", "jaeger", "collector"} <= set(services)
    for name, service in services.items():
        for spec in service.get("ports", []):
            assert str(spec).startswith("127.0.0.1:"), (name, spec)
        tag = service["image"].rsplit(":", 1)[-1]
        assert re.fullmatch(r"[0-9]+\.[0-9]+(\.[0-9]+)?(-slim)?", tag), (name, service["image"])
        for target, source in _volumes(service).items():
            if source.startswith("./"):
                assert (CONFIG_DIR / source).is_file(), f"{name}: {target} <- {source}"


def _resolve_compose(value: str) -> str:
    return re.sub(r"\$\{[A-Z_]+:-([^}]+)\}", r"\1", value)
