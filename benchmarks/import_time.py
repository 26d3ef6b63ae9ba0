"""What ``import toolspan`` costs: milliseconds and modules, each run in a fresh interpreter.

    python benchmarks/import_time.py                 # this checkout, 15 runs
    python benchmarks/import_time.py --ref 1447921   # also a git revision's src/, for a before/after

Per run: ``python -X importtime -c "import toolspan"`` gives the cumulative time of the ``toolspan``
import (its own imports included, the interpreter's start-up not); a second child counts the modules
``import toolspan`` adds to ``sys.modules`` and says whether ``toolspan.bridge`` and the SDK are among
them. The machine is shared: the runs of the two sides are interleaved, the minimum and the median over
the runs are shown, and the process CPU time of the import (less disturbed by other work than the wall
clock).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

COUNT = (
    "import json, sys, time\n"
    "before = set(sys.modules)\n"
    "cpu = time.process_time_ns()\n"
    "import toolspan\n"
    "cpu = time.process_time_ns() - cpu\n"
    "new = [m for m in sys.modules if m not in before]\n"
    "print(json.dumps({'cpu_ns': cpu, 'modules': len(new), 'file': toolspan.__file__,\n"
    "    'toolspan_modules': sum(m == 'toolspan' or m.startswith('toolspan.') for m in new),\n"
    "    'bridge': any(m.startswith('toolspan.bridge') for m in new),\n"
    "    'sdk': any(m.startswith('opentelemetry.sdk') for m in new)}))\n"
)


def _env(src: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "TOOLSPAN_", "OTEL_"))}
    if src is not None:  # ahead of the installed (editable) toolspan on sys.path
        env["PYTHONPATH"] = str(src)
    return env


def measure_once(src: Path | None) -> tuple[int, dict[str, Any]]:
    """One ``-X importtime`` run (microseconds of ``import toolspan``) and one counting run."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import toolspan"],
        capture_output=True,
        text=True,
        env=_env(src),
        check=True,
    )
    last = [ln for ln in proc.stderr.splitlines() if ln.rstrip().endswith("| toolspan")][-1]
    proc = subprocess.run(
        [sys.executable, "-c", COUNT], capture_output=True, text=True, env=_env(src), check=True
    )
    counted: dict[str, Any] = json.loads(proc.stdout)
    if src is not None and not counted.pop("file").startswith(str(src)):
        raise SystemExit(f"measured another toolspan than {src}")
    return int(last.split("|")[1]), counted


def summary(runs: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    wall_us = [wall for wall, _ in runs]
    cpu_ns = [counted.pop("cpu_ns") for _, counted in runs]
    return {
        "runs": len(runs),
        "importtime_ms_min": round(min(wall_us) / 1000, 1),
        "importtime_ms_median": round(statistics.median(wall_us) / 1000, 1),
        "cpu_ms_min": round(min(cpu_ns) / 1e6, 1),
        "cpu_ms_median": round(statistics.median(cpu_ns) / 1e6, 1),
        **runs[-1][1],
    }


def export_src(ref: str, into: Path) -> Path:
    """``src/`` of git revision ``ref``, extracted under ``into``."""
    archive = into / "src.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(REPO), "archive", ref, "src"], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--ref", help="also measure this git revision's src/ (before/after)")
    opts = parser.parse_args(argv)
    results: dict[str, Any] = {"loadavg_before": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory() as tmp:
        sources: dict[str, Path] = {}
        if opts.ref:
            sources[opts.ref] = export_src(opts.ref, Path(tmp))
        sources["this checkout"] = REPO / "src"
        runs: dict[str, list[tuple[int, dict[str, Any]]]] = {name: [] for name in sources}
        for _ in range(opts.runs):  # interleaved, so a busy moment does not land on one side only
            for name, src in sources.items():
                runs[name].append(measure_once(src))
        results.update({name: summary(found) for name, found in runs.items()})
    results["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
