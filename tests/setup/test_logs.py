"""Which log exporters ``configure()`` installs for text deltas (``toolspan._setup.logs``); that the
installed provider carries deltas over OTLP/HTTP and gRPC is tested on a real server in
``tests/server/streams/test_deltas.py``."""

from __future__ import annotations

import pytest

from toolspan._setup.logs import log_exporter_names

_VARS = (
    "OTEL_LOGS_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
)


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({}, []),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4317"}, ["otlp_proto_grpc"]),
        ({"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://x:4318/v1/logs"}, ["otlp_proto_grpc"]),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
            ["otlp_proto_http"],
        ),
        (
            {
                "OTEL_LOGS_EXPORTER": "otlp,console",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "grpc",
            },
            ["otlp_proto_grpc", "console"],
        ),
        ({"OTEL_LOGS_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4317"}, []),
        ({"OTEL_LOGS_EXPORTER": "console,none"}, []),
        ({"OTEL_LOGS_EXPORTER": "OTLP,otlp_proto_grpc"}, ["otlp_proto_grpc"]),
    ],
)
def test_the_environment_selects_the_log_exporters(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], names: list[str]
) -> None:
    for var in _VARS:
        monkeypatch.delenv(var, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert log_exporter_names() == names
