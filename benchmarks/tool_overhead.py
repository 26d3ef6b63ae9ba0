"""Per-call cost of a decorated tool: toolspan against raw OpenTelemetry and other tracing libraries.

Every contender runs in its own process and its own virtual environment (``.bench-venvs/<name>/``,
created on demand with ``python -m venv`` + pip), with the SDK's ``BatchSpanProcessor`` and an
exporter that does nothing (``benchmarks/_noop.py``). The tool takes two arguments and returns a
small dict; content capture is on unless a row says otherwise.

    python benchmarks/tool_overhead.py                 # full run, writes results/tool_overhead.json
    python benchmarks/tool_overhead.py --quick         # a few seconds per contender, for a smoke check
    python benchmarks/tool_overhead.py --only bare,handwritten,toolspan
    python benchmarks/tool_overhead.py --render        # reprint the saved table (refreshing the bridge's)
    python benchmarks/tool_overhead.py --update-readme # also into benchmarks/README.md, docs/benchmarks.md

Processes of all contenders are interleaved over ``--rounds`` rounds, so a noisy moment on the
machine does not land on one contender only; each process times ``--repeats`` repeats of ``--n``
calls after a warm-up, and the table shows the median and the minimum over all repeats.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
VENVS = REPO / ".bench-venvs"
RESULTS = BENCH_DIR / "results"
DEFAULT_OUTPUT = RESULTS / "tool_overhead.json"
CONVERT_RESULTS = RESULTS / "convert.json"
README = BENCH_DIR / "README.md"
README_START = "<!-- results:start -->"
README_END = "<!-- results:end -->"
PROJECT_README = BENCH_DIR.parent / "docs" / "benchmarks.md"
PROJECT_README_START = "<!-- benchmark-table -->"
PROJECT_README_END = "<!-- /benchmark-table -->"
RESULT_PREFIX = "RESULT "
# Pinned so that a rerun measures the same code; bump together and rerun everything.
OTEL_VERSION = "1.45.1"
BASE_PACKAGES = (f"opentelemetry-api=={OTEL_VERSION}", f"opentelemetry-sdk=={OTEL_VERSION}")
# Variables that would change what a contender does: the parent's are not passed on.
SCRUBBED_ENV_PREFIXES = (
    "OTEL_",
    "TOOLSPAN_",
    "TRACELOOP_",
    "LANGFUSE_",
    "LOGFIRE_",
    "MLFLOW_",
    "OPENINFERENCE_",
)


@dataclass(frozen=True)
class Contender:
    name: str
    label: str
    packages: tuple[str, ...]
    modes: tuple[str, ...]
    distributions: tuple[str, ...] = ()


CONTENDERS: dict[str, Contender] = {
    c.name: c
    for c in (
        Contender("bare", "bare function (floor)", (), ("bare",)),
        Contender("handwritten", "hand-written OTel span", (), ("minimal", "on", "off")),
        Contender(
            "toolspan",
            "toolspan @tool",
            ("-e", f"{REPO}[threading]"),
            ("on", "genai", "nocapture", "off"),
            ("toolspan", "opentelemetry-instrumentation-threading"),
        ),
        # traceloop-sdk unpinned sends pip's resolver backtracking for many minutes; it also imports
        # httpx without depending on it.
        Contender(
            "openllmetry",
            "OpenLLMetry @tool",
            ("traceloop-sdk==0.62.4", "httpx"),
            ("on", "off"),
            ("traceloop-sdk",),
        ),
        Contender(
            "openinference",
            "OpenInference @tracer.tool",
            ("openinference-instrumentation==0.1.72",),
            ("on", "off"),
            ("openinference-instrumentation", "openinference-semantic-conventions"),
        ),
        Contender(
            "langfuse",
            'Langfuse @observe(as_type="tool")',
            ("langfuse==5.0.4",),
            ("on", "off"),
            ("langfuse",),
        ),
        Contender(
            "mlflow",
            'MLflow @mlflow.trace(span_type="TOOL")',
            ("mlflow-tracing==3.17.2",),
            ("on", "off"),
            ("mlflow-tracing",),
        ),
        Contender("logfire", "Logfire @logfire.instrument", ("logfire==5.2.0",), ("on", "off"), ("logfire",)),
    )
}
MODE_LABELS = {
    "bare": "-",
    "minimal": "on, minimal GenAI span (reference)",
    "on": "on",
    "genai": "on, GenAI conventions only",
    "nocapture": "on, capture off",
    "off": "off",
}
# A row label of its own where "on" alone would not say what was measured.
ROW_LABELS = {("handwritten", "on"): "on, toolspan's default attribute set"}
# The hand-written span that every "on" row is compared with: the minimal GenAI tool span.
REFERENCE = ("handwritten", "minimal")
# Issue 8's goals against the reference (ratio of toolspan's row to it).
RATIO_GOALS = (("genai", 1.05, "toolspan GenAI conventions"), ("on", 1.15, "toolspan default settings"))
FLOOR = ("bare", "bare")


@dataclass
class Row:
    contender: str
    mode: str
    samples_ns: list[float] = field(default_factory=list)
    cpu_samples_ns: list[float] = field(default_factory=list)
    bare_samples_ns: list[float] = field(default_factory=list)
    # Per repeat, in the same process: tool CPU time / hand-written CPU time, tool - bare CPU time.
    paired_ratios: list[float] = field(default_factory=list)
    paired_wall_ratios: list[float] = field(default_factory=list)
    paired_above_bare_ns: list[float] = field(default_factory=list)
    processes: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    # Per call, from callgrind (``--instructions``): total, main_thread, other_threads, calls.
    instructions: dict[str, Any] | None = None


# --- environments ---------------------------------------------------------------------------------


def venv_python(name: str) -> Path:
    bindir = "Scripts" if os.name == "nt" else "bin"
    return VENVS / name / bindir / ("python.exe" if os.name == "nt" else "python")


def ensure_venv(contender: Contender, *, reinstall: bool, log: Any) -> Path:
    """Create ``.bench-venvs/<name>`` with the contender's packages, unless it already matches."""
    target = VENVS / contender.name
    marker = target / "toolspan-bench.json"
    wanted = {"packages": [*BASE_PACKAGES, *contender.packages]}
    if not reinstall and marker.exists():
        try:
            if json.loads(marker.read_text()) == wanted:
                return venv_python(contender.name)
        except ValueError:
            pass
    print(
        f"[setup] creating {target.relative_to(REPO)} ({' '.join(contender.packages) or 'otel only'})",
        file=log,
        flush=True,
    )
    venv.EnvBuilder(with_pip=True, clear=True).create(target)
    python = venv_python(contender.name)
    cmd = [
        str(python),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        *BASE_PACKAGES,
        *contender.packages,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"pip install failed for {contender.name}:\n{proc.stderr[-2000:]}")
    marker.write_text(json.dumps(wanted))
    return python


# --- running ----------------------------------------------------------------------------------------


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED_ENV_PREFIXES)}
    env["PYTHONPATH"] = str(BENCH_DIR)
    env["PYTHONHASHSEED"] = "0"
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_process(python: Path, contender: Contender, mode: str, opts: argparse.Namespace) -> dict[str, Any]:
    script = BENCH_DIR / "contenders" / f"run_{contender.name}.py"
    cmd = [
        str(python),
        str(script),
        "--mode",
        mode,
        "--n",
        str(opts.n),
        "--repeats",
        str(opts.repeats),
        "--warmup",
        str(opts.warmup),
        "--processor",
        opts.processor,
    ]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=str(BENCH_DIR),
        timeout=opts.timeout,
        check=False,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_PREFIX)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"exit {proc.returncode}: {(proc.stderr or proc.stdout)[-1500:]}")
    result: dict[str, Any] = json.loads(lines[-1][len(RESULT_PREFIX) :])
    result["stderr_tail"] = proc.stderr[-500:] if proc.stderr.strip() else ""
    return result


def check_spans(row: Row, result: dict[str, Any], processor: str = "batch") -> str | None:
    """The exporter must have seen spans when tracing is on, and none when it is off (or when the
    run has no span processor)."""
    exported = result["spans_exported"]
    if row.mode in ("off", "bare") or (processor == "none" and row.contender in COUNTED_CONTENDERS):
        return f"{exported} spans exported with tracing off" if exported else None
    if exported == 0:
        return "no span reached the do-nothing exporter"
    return None


# --- instruction counts ---------------------------------------------------------------------------------

# Rows whose instructions ``--instructions`` counts (those of toolspan's goals and their references).
COUNTED_CONTENDERS = ("bare", "handwritten", "toolspan")


def callgrind_thread_totals(argv: list[str], env: dict[str, str], cwd: Path) -> dict[int, int]:
    """Run ``argv`` under callgrind (no cache simulation), one count per thread: {thread number: Ir}.
    Thread 1 is the one that calls the tool; the BatchSpanProcessor's worker is one of the others."""
    with tempfile.TemporaryDirectory(prefix="toolspan-bench-") as tmp:
        out = Path(tmp) / "callgrind.out"
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out}", *argv],
            env=env,
            cwd=str(cwd),
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"callgrind exit {proc.returncode}: {proc.stderr[-1500:]}")
        totals: dict[int, int] = {}
        for path in Path(tmp).glob("callgrind.out-*"):
            thread = int(path.name.rsplit("-", 1)[1])
            for line in path.read_text().splitlines():
                if line.startswith("totals:"):
                    totals[thread] = int(line.split()[1])
                    break
        if 1 not in totals:
            raise RuntimeError(f"no instruction total in callgrind's output for {' '.join(argv)}")
        return totals


def per_call(low: dict[int, int], high: dict[int, int], calls: int) -> dict[str, float]:
    """Instructions of one call from two counts ``calls`` calls apart: the calling thread's, the other
    threads' (span processor worker) and their sum."""
    main = (high[1] - low.get(1, 0)) / calls
    others = sum(high.get(t, 0) - low.get(t, 0) for t in set(high) | set(low) if t != 1) / calls
    return {
        "total": round(main + others, 1),
        "main_thread": round(main, 1),
        "other_threads": round(others, 1),
    }


def count_instructions(
    python: Path, contender: Contender, mode: str, opts: argparse.Namespace
) -> dict[str, Any]:
    """Instructions per call of one row: the contender's process runs under callgrind twice, making
    ``--instr-warmup`` calls and then ``--instr-low`` or ``--instr-low + --instr-calls`` calls (each
    run flushes its spans at the end, so the export is counted); the difference over
    ``--instr-calls`` is one call's cost, with start-up, imports and warm-up cancelled out."""
    script = BENCH_DIR / "contenders" / f"run_{contender.name}.py"
    counts = []
    for n in (opts.instr_low, opts.instr_low + opts.instr_calls):
        argv = [
            str(python),
            str(script),
            "--mode",
            mode,
            "--processor",
            opts.processor,
            "--warmup",
            str(opts.instr_warmup),
            "--count",
            str(n),
        ]
        counts.append(callgrind_thread_totals(argv, child_env(), BENCH_DIR))
    return {**per_call(counts[0], counts[1], opts.instr_calls), "calls": opts.instr_calls}


def instruction_rows(rows: list[Row], pythons: dict[str, Path], opts: argparse.Namespace) -> None:
    """Count the instructions of every row of ``COUNTED_CONTENDERS`` (sequentially: callgrind runs one
    thread at a time and the count does not depend on the machine's load)."""
    for row in rows:
        if row.error is not None or row.contender not in COUNTED_CONTENDERS:
            continue
        print(f"[callgrind] {row.contender} {row.mode}", file=sys.stderr, flush=True)
        try:
            row.instructions = count_instructions(
                pythons[row.contender], CONTENDERS[row.contender], row.mode, opts
            )
        except Exception as exc:  # reported in the row, the other rows are still counted
            row.instructions = {"error": str(exc)[-500:]}


# --- machine -------------------------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        info["memory_gib"] = round(pages / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    return info


def loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def git_commit() -> str | None:
    try:
        proc = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    return proc.stdout.strip() or None


# --- summary and table ------------------------------------------------------------------------------


def summarize(rows: list[Row], processor: str = "batch") -> list[dict[str, Any]]:
    by_key = {(r.contender, r.mode): r for r in rows}

    def medians(key: tuple[str, str]) -> tuple[float, float] | None:
        row = by_key.get(key)
        if not row or not row.samples_ns:
            return None
        return statistics.median(row.samples_ns), statistics.median(row.cpu_samples_ns)

    reference = medians(REFERENCE)
    floor = medians(FLOOR)
    out: list[dict[str, Any]] = []
    for r in rows:
        entry: dict[str, Any] = {
            "contender": r.contender,
            "label": CONTENDERS[r.contender].label,
            "mode": r.mode,
            "tracing": ROW_LABELS.get((r.contender, r.mode), MODE_LABELS[r.mode]),
        }
        if r.error or not r.samples_ns:
            entry["error"] = r.error or "no samples"
            out.append(entry)
            continue
        med, cpu_med = statistics.median(r.samples_ns), statistics.median(r.cpu_samples_ns)
        entry.update(
            median_ns=round(med, 1),
            min_ns=round(min(r.samples_ns), 1),
            cpu_median_ns=round(cpu_med, 1),
            cpu_min_ns=round(min(r.cpu_samples_ns), 1),
            samples=len(r.samples_ns),
        )
        if r.mode != "bare" and reference:
            entry["x_handwritten"] = round(med / reference[0], 3)
            entry["cpu_x_handwritten"] = round(cpu_med / reference[1], 3)
        if r.mode in ("off", "bare") and floor is not None:
            entry["above_bare_ns"] = round(med - floor[0], 1)
            entry["cpu_above_bare_ns"] = round(cpu_med - floor[1], 1)
        if r.paired_ratios:
            entry["paired_x_handwritten"] = round(statistics.median(r.paired_ratios), 3)
        if r.paired_wall_ratios:
            entry["paired_wall_x_handwritten"] = round(statistics.median(r.paired_wall_ratios), 3)
        if r.instructions is not None:
            entry["instructions"] = r.instructions
            ref_row = by_key.get(REFERENCE)
            ref_instr = (ref_row.instructions or {}).get("total") if ref_row else None
            if "total" in r.instructions and ref_instr and r.mode != "bare":
                entry["instructions_x_handwritten"] = round(r.instructions["total"] / ref_instr, 3)
        if r.mode == "off" and r.paired_above_bare_ns:
            entry["paired_above_bare_ns"] = round(statistics.median(r.paired_above_bare_ns), 1)
        entry.update(
            samples_ns=r.samples_ns,
            cpu_samples_ns=r.cpu_samples_ns,
            in_process_bare_median_ns=round(statistics.median(r.bare_samples_ns), 1)
            if r.bare_samples_ns
            else None,
            spans_exported=sum(p["spans_exported"] for p in r.processes),
            calls=sum(p["calls"] for p in r.processes),
            reference_calls=sum(p.get("reference_calls", 0) for p in r.processes),
            # Spans the BatchSpanProcessor dropped because its queue was full (tracing on only; with
            # --processor none nothing is exported at all).
            spans_dropped=0
            if r.mode in ("off", "bare") or (processor == "none" and r.contender in COUNTED_CONTENDERS)
            else sum(p["calls"] + p.get("reference_calls", 0) - p["spans_exported"] for p in r.processes),
            sample_span=next((p["sample_span"] for p in r.processes if p.get("sample_span")), None),
            notes=sorted({n for p in r.processes for n in p.get("notes", [])}),
            versions=r.processes[0]["versions"] if r.processes else {},
            setup_seconds=r.processes[0].get("setup_seconds") if r.processes else None,
        )
        out.append(entry)
    return out


def evaluate_targets(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Issue 8's targets, judged on this one run: medians of the wall clock and of the process CPU time
    of separate processes (they orient: on a shared machine they follow its load), instructions per
    call (callgrind, when counted), and "paired" CPU and wall: per repeat, in the same process,
    toolspan's time against the minimal hand-written span's (tracing on) or the bare call's (tracing
    off). Instructions and the paired clocks decide."""
    targets: list[dict[str, Any]] = []
    for clock, key in (("wall", "median_ns"), ("cpu", "cpu_median_ns")):
        med = {(e["contender"], e["mode"]): e.get(key) for e in summary}
        ts_on, ts_off = med.get(("toolspan", "on")), med.get(("toolspan", "off"))
        ref, floor = med.get(REFERENCE), med.get(FLOOR)
        others = [c for c in CONTENDERS if c not in ("bare", "handwritten", "toolspan")]
        others_on = {c: med[(c, "on")] for c in others if med.get((c, "on"))}
        others_off = {c: med[(c, "off")] for c in others if med.get((c, "off"))}
        for mode, goal, what in RATIO_GOALS:
            mine = med.get(("toolspan", mode))
            if mine and ref:
                ratio = mine / ref
                targets.append(
                    {
                        "target": f"{what} <= {goal:.2f}x minimal GenAI span",
                        "clock": clock,
                        "value": f"{ratio:.3f}x",
                        "met": ratio <= goal,
                    }
                )
        if ts_on and others_on:
            fastest = min(others_on, key=others_on.__getitem__)
            targets.append(
                {
                    "target": "toolspan faster than every other library (tracing on)",
                    "clock": clock,
                    "value": f"{ts_on:,.0f} ns vs {fastest} {others_on[fastest]:,.0f} ns",
                    "met": ts_on < others_on[fastest],
                }
            )
        if ts_off and floor:
            above = ts_off - floor
            targets.append(
                {
                    "target": "toolspan tracing off <= 300 ns above the bare call",
                    "clock": clock,
                    "value": f"{above:+,.0f} ns",
                    "met": above <= 300,
                }
            )
        if ts_off and others_off:
            cheapest = min(others_off, key=others_off.__getitem__)
            targets.append(
                {
                    "target": "toolspan tracing off <= cheapest other library's off switch",
                    "clock": clock,
                    "value": f"{ts_off:,.0f} ns vs {cheapest} {others_off[cheapest]:,.0f} ns",
                    "met": ts_off <= others_off[cheapest],
                }
            )
    paired = {(e["contender"], e["mode"]): e for e in summary}
    for mode, goal, what in RATIO_GOALS:
        ratio = paired.get(("toolspan", mode), {}).get("instructions_x_handwritten")
        if ratio is not None:
            targets.append(
                {
                    "target": f"{what} <= {goal:.2f}x minimal GenAI span",
                    "clock": "instructions",
                    "value": f"{ratio:.3f}x",
                    "met": ratio <= goal,
                }
            )
    off = paired.get(("toolspan", "off"), {})

    def paired_ratios(clock: str, key: str) -> None:
        for mode, goal, what in RATIO_GOALS:
            row = paired.get(("toolspan", mode), {})
            if key in row:
                targets.append(
                    {
                        "target": f"{what} <= {goal:.2f}x minimal GenAI span",
                        "clock": clock,
                        "value": f"{row[key]:.3f}x",
                        "met": row[key] <= goal,
                    }
                )

    paired_ratios("paired cpu", "paired_x_handwritten")
    if "paired_above_bare_ns" in off:
        above = off["paired_above_bare_ns"]
        targets.append(
            {
                "target": "toolspan tracing off <= 300 ns above the bare call",
                "clock": "paired cpu",
                "value": f"{above:+,.0f} ns",
                "met": above <= 300,
            }
        )
        others = {
            c: paired[(c, "off")]["paired_above_bare_ns"]
            for c in CONTENDERS
            if c not in ("bare", "handwritten", "toolspan")
            and "paired_above_bare_ns" in paired.get((c, "off"), {})
        }
        if others:
            cheapest = min(others, key=others.__getitem__)
            targets.append(
                {
                    "target": "toolspan tracing off <= cheapest other library's off switch",
                    "clock": "paired cpu",
                    "value": f"{above:+,.0f} ns vs {cheapest} {others[cheapest]:+,.0f} ns above bare",
                    "met": above <= others[cheapest],
                }
            )
    paired_ratios("paired wall", "paired_wall_x_handwritten")
    return targets


def convert_summary() -> dict[str, Any] | None:
    """The bridge's throughput, as written by benchmarks/bench_convert.py (not run from here)."""
    if not CONVERT_RESULTS.exists():
        return None
    try:
        data: dict[str, Any] = json.loads(CONVERT_RESULTS.read_text())
    except (OSError, ValueError) as exc:
        return {"error": f"unreadable {CONVERT_RESULTS.name}: {exc}"}
    return data


def fmt_ns(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


TABLE_HEADER = (
    "| contender | tracing | median ns/call | min ns/call | x minimal span | ns above bare "
    "| CPU ns/call | CPU x minimal span | paired CPU | paired wall | instructions/call "
    "| instr. x minimal span |"
)


def render_instructions(e: dict[str, Any]) -> tuple[str, str]:
    """The two instruction cells of a row: per call (the worker thread's share in brackets), ratio."""
    counted = e.get("instructions")
    if not counted:
        return "-", "-"
    if "error" in counted:
        return "failed", "-"
    cell = f"{counted['total']:,.0f}"
    if counted.get("other_threads", 0) >= 100:  # below: the worker's timer wake-ups, not spans
        cell += f" ({counted['other_threads']:,.0f} worker)"
    ratio = e.get("instructions_x_handwritten")
    return cell, "-" if ratio is None else f"{ratio:.2f}x"


def render_table(doc: dict[str, Any]) -> str:
    lines = [TABLE_HEADER, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for e in doc["rows"]:
        if "error" in e:
            lines.append(f"| {e['label']} | {e['tracing']} | failed: {e['error'][:60]} | | | | | | | | | |")
            continue
        ratio = f"{e['x_handwritten']:.2f}x" if "x_handwritten" in e else "-"
        cpu_ratio = f"{e['cpu_x_handwritten']:.2f}x" if "cpu_x_handwritten" in e else "-"
        above = f"{e['above_bare_ns']:+,.0f}" if "above_bare_ns" in e else "-"
        if "paired_x_handwritten" in e:
            paired = f"{e['paired_x_handwritten']:.2f}x"
        elif "paired_above_bare_ns" in e:
            paired = f"{e['paired_above_bare_ns']:+,.0f}"
        else:
            paired = "-"
        paired_wall = f"{e['paired_wall_x_handwritten']:.2f}x" if "paired_wall_x_handwritten" in e else "-"
        instr, instr_ratio = render_instructions(e)
        lines.append(
            f"| {e['label']} | {e['tracing']} | {fmt_ns(e['median_ns'])} | {fmt_ns(e['min_ns'])} | "
            f"{ratio} | {above} | {fmt_ns(e['cpu_median_ns'])} | {cpu_ratio} | {paired} | {paired_wall} | "
            f"{instr} | {instr_ratio} |"
        )
    return "\n".join(lines)


def render_bridge(doc: dict[str, Any]) -> str:
    bridge = doc.get("bridge")
    if not bridge:
        return "Bridge throughput: not measured in this run (no `benchmarks/results/convert.json`)."
    if "error" in bridge:
        return f"Bridge throughput: {bridge['error']}"
    return "Bridge throughput (from `benchmarks/results/convert.json`):\n\n" + render_convert(bridge)


def render_convert(bridge: dict[str, Any]) -> str:
    """The convert benchmark's numbers: one row per JSON library of ``toolspan convert``."""
    inp = bridge.get("input") if isinstance(bridge.get("input"), dict) else {}
    base = bridge.get("json_loads_baseline") or {}
    runs = bridge.get("convert_subprocess") or {}
    lines = [
        f"`{bridge.get('command', 'toolspan convert')}` on {inp.get('spans', 0):,} spans "
        f"({inp.get('bytes', 0) / 1e9:.2f} GB of OTLP JSON Lines); baseline `json.loads` of every line: "
        f"{base.get('cpu_s', 0):.1f} s CPU. Measured {bridge.get('date_utc', '?')}.",
        "",
        "| JSON library | spans/s | CPU / json.loads (best runs) | CPU / json.loads (paired, median) "
        "| instructions / json.loads | peak RSS | RSS / input |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    counted = bridge.get("instructions") or {}
    for backend, r in runs.items():
        paired = r.get("paired_ratio_cpu_median")
        instr = (counted.get(backend) or {}).get("ratio_to_json_loads")
        lines.append(
            f"| {backend} | {r['spans_per_second_cpu']:,.0f} | {r['ratio_to_json_loads_cpu']:.2f}x | "
            f"{'-' if paired is None else f'{paired:.2f}x'} | {'-' if instr is None else f'{instr:.2f}x'} | "
            f"{r['peak_rss_bytes'] / 2**20:.0f} MiB | {r['peak_rss_fraction_of_input']:.3f} |"
        )
    if counted:
        lines += [
            "",
            f"Instructions counted with callgrind on the first {counted['spans']:,} spans, start-up and "
            "imports subtracted (an empty file's count): the same number on every run.",
        ]
    return "\n".join(lines)


def render_machine(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    run = doc["run"]
    versions = ", ".join(f"{k} {v}" for k, v in doc.get("versions", {}).items())
    instr = run.get("instructions")
    counted = (
        f"Instructions: callgrind, a run of {instr['low'] + instr['calls']:,} calls minus one of "
        f"{instr['low']:,} (each after {instr['warmup']:,} warm-up calls, its spans flushed), over "
        f"{instr['calls']:,}; the worker's share in brackets.\n"
        if instr
        else ""
    )
    return (
        f"Machine: {m['cpu']}, {m['cores']} cores, {m.get('memory_gib', '?')} GiB, "
        f"{m['implementation']} {m['python']}, {m['platform']}.\n"
        f"Run: {run['date']}, commit {run.get('commit') or '?'}, {run['rounds']} rounds x {run['repeats']} "
        f"repeats x {run['n']:,} calls per row (warm-up {run['warmup']:,}), load average before/after "
        f"{run.get('loadavg_before')} / {run.get('loadavg_after')}; span processor: "
        f"{run.get('processor', 'batch')}.\n"
        f"{counted}"
        f"Versions: {versions}."
    )


def render_targets(doc: dict[str, Any]) -> str:
    out = []
    for t in doc.get("targets", []):
        out.append(f"- {'met' if t['met'] else 'MISSED'} ({t['clock']}): {t['target']}: {t['value']}")
    return "\n".join(out)


def render_drops(doc: dict[str, Any]) -> str:
    drops = [
        f"{e['label']} ({e['tracing']}): {e['spans_dropped']:,} of "
        f"{e['calls'] + e.get('reference_calls', 0):,}"
        for e in doc["rows"]
        if e.get("spans_dropped")
    ]
    if not drops:
        return ""
    return (
        "Spans dropped by a full BatchSpanProcessor queue (the worker thread fell behind): "
        + "; ".join(drops)
        + "."
    )


def render_all(doc: dict[str, Any]) -> str:
    parts = [
        render_table(doc),
        render_drops(doc),
        render_targets(doc),
        render_machine(doc),
        render_bridge(doc),
    ]
    return "\n\n".join(p for p in parts if p)


def update_readme(doc: dict[str, Any]) -> None:
    """Put the tables into benchmarks/README.md and docs/benchmarks.md (between their markers)."""
    for path, first, last in (
        (README, README_START, README_END),
        (PROJECT_README, PROJECT_README_START, PROJECT_README_END),
    ):
        text = path.read_text()
        start, end = text.find(first), text.find(last)
        if start < 0 or end < start:
            raise SystemExit(f"{path.name} has no {first} ... {last} section")
        block = f"{first}\n{render_all(doc)}\n{last}"
        path.write_text(text[:start] + block + text[end + len(last) :])


# --- main -----------------------------------------------------------------------------------------------


def select_rows(only: str) -> dict[str, list[str]]:
    """``--only``: contenders (all their modes) or ``contender:mode`` items, comma-separated; empty:
    everything. Unknown names end the run with the list of known ones."""
    selected: dict[str, list[str]] = {}
    for item in (part.strip() for part in only.split(",")):
        if not item:
            continue
        name, _, mode = item.partition(":")
        contender = CONTENDERS.get(name)
        if contender is None:
            raise SystemExit(f"unknown contender {name!r}; known: {', '.join(CONTENDERS)}")
        if mode and mode not in contender.modes:
            raise SystemExit(f"{name} has no mode {mode!r}; its modes: {', '.join(contender.modes)}")
        modes = selected.setdefault(name, [])
        modes.extend(m for m in ([mode] if mode else contender.modes) if m not in modes)
    return selected or {c.name: list(c.modes) for c in CONTENDERS.values()}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny run (smoke check, numbers meaningless)")
    p.add_argument(
        "--only",
        default="",
        help="comma-separated contenders or contender:mode rows (default: all): " + ",".join(CONTENDERS),
    )
    p.add_argument("--n", type=int, default=None, help="calls per repeat (default 10000)")
    p.add_argument("--repeats", type=int, default=None, help="repeats per process (default 5)")
    p.add_argument("--rounds", type=int, default=None, help="processes per row, interleaved (default 3)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up calls per process (default 5000)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per process")
    p.add_argument(
        "--no-venv",
        action="store_true",
        help="run every contender with this interpreter instead of its own venv",
    )
    p.add_argument("--reinstall", action="store_true", help="recreate the venvs")
    p.add_argument("--setup-only", action="store_true", help="create the venvs and exit")
    p.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    counting = p.add_mutually_exclusive_group()
    counting.add_argument(
        "--instructions",
        action="store_true",
        default=None,
        help="also count instructions per call with valgrind's callgrind (bare, hand-written and toolspan "
        "rows; default: yes when valgrind is installed, except with --quick)",
    )
    counting.add_argument("--no-instructions", dest="instructions", action="store_false")
    p.add_argument("--instr-calls", type=int, default=2_000, help="calls between the two counted runs")
    p.add_argument("--instr-low", type=int, default=200, help="calls of the shorter counted run")
    p.add_argument("--instr-warmup", type=int, default=300, help="warm-up calls of a counted run")
    p.add_argument(
        "--processor",
        choices=("batch", "simple", "none"),
        default="batch",
        help="span processor of the bare, hand-written and toolspan rows: the SDK's BatchSpanProcessor "
        "(default, what the goals are judged on), SimpleSpanProcessor, or none (to see what the "
        "processor costs)",
    )
    p.add_argument(
        "--render",
        action="store_true",
        help="print the table of --output (with the latest results/convert.json) and exit",
    )
    p.add_argument(
        "--update-readme",
        action="store_true",
        help="write the tables into benchmarks/README.md and docs/benchmarks.md",
    )
    opts = p.parse_args(argv)
    defaults = (500, 2, 1, 200) if opts.quick else (10_000, 5, 3, 5_000)
    for name, default in zip(("n", "repeats", "rounds", "warmup"), defaults, strict=True):
        if getattr(opts, name) is None:
            setattr(opts, name, default)
    if opts.instructions is None:
        opts.instructions = not opts.quick and not opts.render and shutil.which("valgrind") is not None
    elif opts.instructions and shutil.which("valgrind") is None:
        p.error("--instructions needs valgrind (apt-get install valgrind)")
    if opts.instr_calls < 1 or opts.instr_low < 0 or opts.instr_warmup < 0:
        p.error("--instr-calls must be at least 1, --instr-low and --instr-warmup at least 0")
    return opts


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    if opts.render:
        doc = json.loads(opts.output.read_text())
        bridge = convert_summary()
        targets = evaluate_targets(doc["rows"])  # judged as this version judges them
        if (bridge is not None and bridge != doc.get("bridge")) or targets != doc.get("targets"):
            if bridge is not None:  # the convert benchmark ran since
                doc["bridge"] = bridge
            doc["targets"] = targets
            opts.output.write_text(json.dumps(doc, indent=2) + "\n")
        print(render_all(doc))
        if opts.update_readme:
            update_readme(doc)
        return 0

    selected = select_rows(opts.only)
    log = sys.stderr
    pythons: dict[str, Path] = {}
    rows: list[Row] = []
    for name, modes in selected.items():
        contender = CONTENDERS[name]
        try:
            pythons[name] = (
                Path(sys.executable)
                if opts.no_venv
                else ensure_venv(contender, reinstall=opts.reinstall, log=log)
            )
            rows.extend(Row(name, mode) for mode in modes)
        except Exception as exc:  # a contender that cannot be installed is reported, not fatal
            rows.extend(Row(name, mode, error=str(exc)) for mode in modes)

    if opts.setup_only:
        failed = [r for r in rows if r.error]
        for r in failed:
            print(f"[setup] {r.contender}: {r.error}", file=log)
        return 1 if failed else 0

    load_before = loadavg()
    started = time.time()
    for rnd in range(opts.rounds):
        todo = [r for r in rows if r.error is None]
        shift = rnd % max(len(todo), 1)
        for row in todo[shift:] + todo[:shift]:  # a different order each round
            contender = CONTENDERS[row.contender]
            print(f"[round {rnd + 1}/{opts.rounds}] {row.contender} {row.mode}", file=log, flush=True)
            try:
                result = run_process(pythons[row.contender], contender, row.mode, opts)
            except Exception as exc:
                row.error = str(exc)
                continue
            problem = check_spans(row, result, opts.processor)
            if problem:
                row.error = problem
                continue
            row.samples_ns.extend(result["samples_ns"])
            row.cpu_samples_ns.extend(result["cpu_samples_ns"])
            row.bare_samples_ns.extend(result["bare_samples_ns"])
            row.paired_above_bare_ns.extend(
                t - b for t, b in zip(result["cpu_samples_ns"], result["bare_cpu_samples_ns"], strict=True)
            )
            row.paired_ratios.extend(
                t / r
                for t, r in zip(result["cpu_samples_ns"], result["reference_cpu_samples_ns"], strict=False)
            )
            row.paired_wall_ratios.extend(
                t / r for t, r in zip(result["samples_ns"], result["reference_samples_ns"], strict=False)
            )
            row.processes.append(result)

    if opts.instructions:
        instruction_rows(rows, pythons, opts)
    summary = summarize(rows, opts.processor)
    versions: dict[str, str] = {}
    for e in summary:
        versions.update(e.get("versions", {}))
    doc: dict[str, Any] = {
        "benchmark": "tool_overhead",
        "unit": "ns per call (loop overhead included)",
        "tool": "get_forecast(city: str, days: int) -> small dict, called as get_forecast('Paris', 3)",
        "machine": machine_info(),
        "run": {
            "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": git_commit(),
            "quick": opts.quick,
            "no_venv": opts.no_venv,
            "n": opts.n,
            "repeats": opts.repeats,
            "rounds": opts.rounds,
            "warmup": opts.warmup,
            "processor": opts.processor,
            "instructions": {
                "calls": opts.instr_calls,
                "low": opts.instr_low,
                "warmup": opts.instr_warmup,
                "tool": "valgrind --tool=callgrind --separate-threads=yes",
            }
            if opts.instructions
            else None,
            "seconds": round(time.time() - started, 1),
            "loadavg_before": load_before,
            "loadavg_after": loadavg(),
            "reference": "/".join(REFERENCE),
        },
        "versions": dict(sorted(versions.items())),
        "rows": summary,
        "targets": evaluate_targets(summary),
        "bridge": convert_summary(),
    }
    opts.output.parent.mkdir(parents=True, exist_ok=True)
    tmp = opts.output.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(opts.output)
    print(render_all(doc))
    if opts.update_readme:
        update_readme(doc)
    return 1 if any("error" in e for e in summary) else 0


if __name__ == "__main__":
    raise SystemExit(main())
