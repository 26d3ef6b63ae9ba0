"""Running a script of ``benchmarks/`` as its smoke tests do: in a child Python, with the arguments given and
``--output`` a JSON file; the document it wrote and what it printed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.paths import REPO


def run_benchmark(script: str, output: Path, *args: str, timeout: float = 600) -> tuple[dict[str, Any], str]:
    """Run ``benchmarks/<script>`` with ``args`` and ``--output output``; ``(its JSON document, its
    standard output)``. Fails the test, with the end of its standard error, when the script fails."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), *args, "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(output.read_text()), proc.stdout
