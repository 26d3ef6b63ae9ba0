"""``import toolspan`` stays light: what decorating tools needs is loaded, the SDK setup, the tool-call
runner, the exporters and the bridge only when first used; every public name still resolves."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import entry_points
from typing import Any

import pytest

import toolspan

LAZY = {
    "ToolCall": "toolspan._runner.run",
    "arun_tool_calls": "toolspan._runner.run",
    "configure": "toolspan._setup.configure",
    "run_tool_calls": "toolspan._runner.run",
    "text_delta": "toolspan._instrument.deltas",
    "tool": "toolspan._instrument.tool",
    "agent": "toolspan._instrument.agent",
    "replay": "toolspan._decisions.replay",
}


def _fresh(code: str) -> Any:
    """Run ``code`` in a new interpreter (nothing imported yet) and return the JSON it prints."""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(proc.stdout)


@pytest.mark.processes
def test_import_toolspan_loads_neither_the_bridge_nor_the_sdk_nor_the_exporters() -> None:
    loaded = _fresh(
        "import json, sys\n"
        "import toolspan\n"
        "@toolspan.tool\n"
        "def f(x: int) -> int:\n"
        "    return x\n"
        "assert f(2) == 2\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    heavy = [
        name
        for name in loaded
        if name.startswith(("toolspan.bridge", "toolspan.exporters", "opentelemetry.sdk", "google.protobuf"))
        or name in ("toolspan._setup.configure", "toolspan._runner.run", "toolspan.cli")
    ]
    assert heavy == []
    assert {"toolspan._instrument.tool", "wrapt"} <= set(loaded)


LAZY_KERNEL = {"toolspan._util", "toolspan._util.lazy"}  # how every package's names load on first use


@pytest.mark.processes
@pytest.mark.parametrize(
    ("module", "allowed"),
    [
        ("toolspan", {"toolspan", *LAZY_KERNEL}),
        ("toolspan.semconv", {"toolspan", "toolspan.semconv", *LAZY_KERNEL}),
        # The neutral model stands alone: no instrumentation, no views, no policy (its records' quick
        # __init__ is the kernel's).
        (
            "toolspan.bridge.model",
            {"toolspan", "toolspan.bridge", "toolspan.bridge.model", "toolspan._util.records", *LAZY_KERNEL},
        ),
        ("toolspan.server", {"toolspan", "toolspan.server", *LAZY_KERNEL}),
        ("toolspan.bridge", {"toolspan", "toolspan.bridge", *LAZY_KERNEL}),
    ],
)
def test_each_package_import_loads_only_what_it_uses(module: str, allowed: set[str]) -> None:
    loaded = _fresh(f"import json, sys\nimport {module}\nprint(json.dumps(sorted(sys.modules)))\n")
    assert {name for name in loaded if name.startswith("toolspan")} == allowed
    assert not [name for name in loaded if name.startswith(("wrapt", "opentelemetry.sdk", "starlette"))]


@pytest.mark.processes
@pytest.mark.parametrize(("name", "module"), sorted(LAZY.items()))
def test_lazy_names_resolve_to_their_modules_objects(name: str, module: str) -> None:
    found = _fresh(
        "import json, sys\n"
        "from toolspan import " + name + " as value\n"
        "print(json.dumps(['" + module + "' in sys.modules, callable(value)]))\n"
    )
    assert found == [True, True]
    assert getattr(toolspan, name) is getattr(sys.modules[module], name)


def test_every_public_name_is_listed_and_reachable() -> None:
    assert set(LAZY) <= set(toolspan.__all__)
    assert set(toolspan.__all__) <= set(dir(toolspan))
    for name in toolspan.__all__:
        assert getattr(toolspan, name) is not None


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="module 'toolspan' has no attribute 'nothing_here'"):
        toolspan.nothing_here  # noqa: B018
    with pytest.raises(ImportError):
        exec("from toolspan import nothing_here", {})


def test_exporters_and_their_entry_points_still_load() -> None:
    from toolspan import exporters
    from toolspan.exporters.otlp_file import OtlpJsonFileExporter
    from toolspan.exporters.timeline import TimelineJsonExporter

    assert exporters.OtlpJsonFileExporter is OtlpJsonFileExporter
    assert exporters.TimelineJsonExporter is TimelineJsonExporter
    loaded = {e.name: e.load() for e in entry_points(group="opentelemetry_traces_exporter")}
    assert loaded["toolspan_otlp_file"] is OtlpJsonFileExporter
    assert loaded["toolspan_timeline"] is TimelineJsonExporter
