"""Smoke test of a built toolspan: the distributions' contents, then the installed wheel in use.

    python scripts/smoke_wheel.py --dists DIR     # check the sdist and wheel in DIR (stdlib only)
    python -I smoke_wheel.py                      # in a fresh venv holding only the wheel: use it

The second form must run with ``-I`` from outside the source tree, so that ``import toolspan`` can only
find the installed wheel. Exits non-zero with one line per problem; prints one ``ok`` line per check.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from importlib import metadata, resources
from pathlib import Path

SCHEMAS = ("events", "plans", "progress", "timeline", "tree", "page", "audit", "ag-ui", "ai-sdk")
EXPORTERS = {
    "toolspan_otlp_file": "OtlpJsonFileExporter",
    "toolspan_timeline": "TimelineJsonExporter",
}
SDIST_MUST_HOLD = (
    "LICENSE",
    "CHANGELOG.md",
    "README.md",
    "pyproject.toml",
    "docs/formats/",
    "tests/fixtures/",
)
WHEEL_MUST_HOLD = (
    "toolspan/py.typed",
    "toolspan/cli/__init__.py",
    "toolspan/_instrument/tool.py",
    "toolspan/_util/lazy.py",
    *(f"toolspan/bridge/schemas/{name}.schema.json" for name in SCHEMAS),
    "toolspan/policy/schemas/policy.schema.json",
    *(
        f"toolspan/page/{name}"
        for name in ("trace/main.js", "page.css", "template.html", "theme.css", "common.js", "top.html")
    ),
    *(f"toolspan/page/{name}" for name in ("app.html", "app.css", "list.js", "inbox.js")),
)


def ok(what: str) -> None:
    sys.stdout.write(f"ok: {what}\n")


def check_dists(directory: Path) -> list[str]:
    problems: list[str] = []
    (sdist,) = sorted(directory.glob("toolspan-*.tar.gz"))
    (wheel,) = sorted(directory.glob("toolspan-*.whl"))
    with tarfile.open(sdist) as archive:
        root = archive.getnames()[0].split("/")[0]
        names = {name.removeprefix(f"{root}/") for name in archive.getnames()}
    for want in SDIST_MUST_HOLD:
        if not any(name == want or (want.endswith("/") and name.startswith(want)) for name in names):
            problems.append(f"{sdist.name}: {want} missing")
    if not problems:
        ok(f"{sdist.name} holds {', '.join(SDIST_MUST_HOLD)}")
    before = len(problems)
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    for want in WHEEL_MUST_HOLD:
        if want not in names:
            problems.append(f"{wheel.name}: {want} missing")
    if not any(name.endswith(".dist-info/licenses/LICENSE") for name in names):
        problems.append(f"{wheel.name}: LICENSE missing from the dist-info")
    if any(name.startswith(("tests/", "src/")) for name in names):
        problems.append(f"{wheel.name}: holds source-tree folders")
    if len(problems) == before:
        ok(f"{wheel.name} holds the JSON Schemas, py.typed and LICENSE")
    return problems


def check_installed() -> list[str]:
    import toolspan
    from toolspan.bridge.views import load_schema

    problems: list[str] = []
    location = Path(toolspan.__file__).resolve()
    if "site-packages" not in location.parts:
        problems.append(f"toolspan imported from {location}, not from an installed wheel")
    version = metadata.version("toolspan")
    if toolspan.__version__ != version:
        problems.append(f"toolspan.__version__ {toolspan.__version__!r} != metadata {version!r}")
    ok(f"import toolspan {version} from {location.parent}")

    folder = resources.files("toolspan.bridge") / "schemas"
    for name in SCHEMAS:
        text = (folder / f"{name}.schema.json").read_text(encoding="utf-8")
        if json.loads(text) != load_schema(name) or "$schema" not in load_schema(name):
            problems.append(f"schema {name}: not loadable through importlib.resources")
    if not (resources.files("toolspan") / "py.typed").is_file():
        problems.append("py.typed missing")
    ok(f"schemas {', '.join(SCHEMAS)} and py.typed via importlib.resources")

    (script,) = metadata.entry_points(group="console_scripts", name="toolspan")
    if not callable(script.load()):
        problems.append("console script toolspan: not callable")
    for name, cls in EXPORTERS.items():
        (entry,) = metadata.entry_points(group="opentelemetry_traces_exporter", name=name)
        if entry.load().__name__ != cls:
            problems.append(f"exporter entry point {name}: loads {entry.load()!r}")
    ok(f"entry points toolspan, {', '.join(EXPORTERS)}")

    command = Path(sys.executable).with_name("toolspan")
    done = subprocess.run([command, "--version"], capture_output=True, text=True, check=False)
    if (done.returncode, done.stdout) != (0, f"toolspan {version}\n"):
        problems.append(f"toolspan --version: rc {done.returncode}, {done.stdout!r} {done.stderr!r}")
    ok(done.stdout.strip())

    with tempfile.TemporaryDirectory() as tmp:
        problems += convert_a_trace(Path(tmp), command)
    return problems


def convert_a_trace(tmp: Path, command: Path) -> list[str]:
    """Record a tool call with the installed toolspan, then convert the file with its script."""
    traces = tmp / "traces.jsonl"
    record = (
        "import toolspan\n"
        f"provider = toolspan.configure(service_name='smoke', file={str(traces)!r})\n"
        "add = toolspan.tool(lambda a, b: a + b, name='add')\n"
        "with toolspan.agent('smoke'), toolspan.tool_call_id('call_smoke'):\n"
        "    assert add(2, 3) == 5\n"
        "provider.shutdown()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSPAN_"))}
    done = subprocess.run(
        [sys.executable, "-I", "-c", record], cwd=tmp, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0 or done.stderr:
        return [f"recording a trace failed: rc {done.returncode}: {done.stderr.strip()}"]
    done = subprocess.run(
        [command, "convert", str(traces), "--to", "events"], capture_output=True, text=True, check=False
    )
    events = [json.loads(line) for line in done.stdout.splitlines()]
    got = [(e["type"], e["tool_name"], e["call_id"]) for e in events]
    want = [("act", "add", "call_smoke"), ("observe", "add", "call_smoke")]
    if done.returncode != 0 or got != want or events[1]["observation"] != 5:
        return [f"toolspan convert: rc {done.returncode}, events {got}, {done.stderr.strip()}"]
    ok("recorded a tool call and converted it: act + observe")
    page = tmp / "run.html"
    done = subprocess.run(
        [command, "convert", str(traces), "--to", "html", "-o", str(page)],
        capture_output=True,
        text=True,
        check=False,
    )
    html = page.read_text("utf-8") if page.is_file() else ""
    if done.returncode != 0 or "Content-Security-Policy" not in html or '"add"' not in html:
        return [f"toolspan convert --to html: rc {done.returncode}, {done.stderr.strip()}"]
    ok("the trace page of that call: one self-contained HTML file")
    return []


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dists", type=Path, help="check the sdist and wheel in this directory")
    args = parser.parse_args()
    problems = check_dists(args.dists) if args.dists else check_installed()
    for problem in problems:
        sys.stderr.write(f"FAILED: {problem}\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
