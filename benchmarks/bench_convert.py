"""Benchmark ``toolspan convert FILE --to events -o /dev/null`` on a generated OTLP JSON Lines file.

Generates the input if missing (``gen_agent_spans.py``: agent traces, 200 spans per request line), then
measures, each in a fresh Python process (``os.wait4`` gives that process's own CPU time and peak RSS):

- ``json_loads``: ``json.loads`` of every line of the file, nothing else (the baseline);
- ``convert``: ``python -m toolspan convert FILE --to events -o /dev/null``, once with the standard
  library's json (``TOOLSPAN_JSON=stdlib``) and once with orjson when it is installed;
and the same conversion in-process (``toolspan.cli.main``, the same code path) for wall time.

Reports spans/second, peak RSS against the input size, and the ratio of the conversion to the baseline
(by CPU time and by wall time): the ratio of the best runs, and the median of the per-round ratios (each
round runs the baseline and the conversions back to back, so a slow moment of a shared machine lands on
both sides of a pair). Targets: ratio <= 3, peak RSS below the input file's size.

``--instructions N`` also counts instructions with ``valgrind --tool=callgrind`` (the same count on every
run, whatever else the machine does) on the first N spans of the file: each command once on that sample
and once on an empty file, so interpreter start-up and imports cancel out. Results go to
``benchmarks/results/convert.json``.

    python benchmarks/bench_convert.py [--spans 1000000] [--input FILE] [--repeat 3] [--instructions 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_agent_spans import generate  # noqa: E402

BASELINE = """
import json, sys
with open(sys.argv[1], "rb") as f:
    for line in f:
        json.loads(line)
"""


def run_child(argv: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Run a process; its wall time, CPU time (user + sys) and peak RSS (bytes), from its own rusage."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed ({proc.returncode}): {err}")
    rss = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_bytes": rss}


def callgrind_instructions(argv: list[str], env: dict[str, str] | None = None) -> int:
    """Instructions the command executes (valgrind's callgrind, no cache simulation)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=False,
        )
        if proc.returncode != 0:
            raise SystemExit(f"callgrind failed on {argv}: {proc.stderr.decode()[-2000:]}")
        for line in out.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise SystemExit(f"no instruction total from callgrind for {argv}")


def sample_file(path: Path, spans: int, target: Path) -> int:
    """The first lines of ``path`` holding at least ``spans`` spans, into ``target``; the span count."""
    n = 0
    with path.open("rb") as src, target.open("wb") as dst:
        for line in src:
            if n >= spans:
                break
            dst.write(line)
            n += line.count(b'"spanId"')
    return n


def instruction_ratios(path: Path, spans: int, backends: list[str], py: str) -> dict[str, Any]:
    """(conversion - conversion of an empty file) / (json.loads - json.loads of an empty file)."""
    with tempfile.TemporaryDirectory() as tmp:
        sample, empty = Path(tmp) / "sample.jsonl", Path(tmp) / "empty.jsonl"
        n = sample_file(path, spans, sample)
        empty.write_bytes(b"")
        print(f"callgrind: json.loads baseline on {n} spans ...", file=sys.stderr)
        base = callgrind_instructions([py, "-c", BASELINE, str(sample)]) - callgrind_instructions(
            [py, "-c", BASELINE, str(empty)]
        )
        out: dict[str, Any] = {"spans": n, "json_loads_instructions": base}
        for backend in backends:
            print(f"callgrind: toolspan convert, {backend} JSON, on {n} spans ...", file=sys.stderr)
            env = {**os.environ, "TOOLSPAN_JSON": "stdlib" if backend == "stdlib" else "auto"}
            cmd = [py, "-m", "toolspan", "convert", "--to", "events", "-o", os.devnull]
            work = callgrind_instructions([*cmd, str(sample)], env) - callgrind_instructions(
                [*cmd, str(empty)], env
            )
            out[backend] = {
                "instructions": work,
                "instructions_per_span": work / n,
                "ratio_to_json_loads": work / base,
            }
        return out


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def best(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: min(r[key] for r in runs) for key in runs[0]}


def count_spans(path: Path) -> int:
    n = 0
    with path.open("rb") as f:
        for line in f:
            n += line.count(b'"spanId"')
    return n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument(
        "--input", type=Path, default=None, help="default: <tmp>/toolspan-bench/agent_spans_<N>.jsonl"
    )
    parser.add_argument("--repeat", type=int, default=3, help="rounds of every measurement")
    parser.add_argument(
        "--instructions",
        type=int,
        default=0,
        metavar="N",
        help="also count instructions with callgrind on the first N spans (needs valgrind)",
    )
    parser.add_argument("--skip-inprocess", action="store_true")
    parser.add_argument("--results", type=Path, default=HERE / "results" / "convert.json")
    args = parser.parse_args(argv)

    path = args.input or Path(tempfile.gettempdir()) / "toolspan-bench" / f"agent_spans_{args.spans}.jsonl"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        print(f"generating {args.spans} spans into {path} ...", file=sys.stderr)
        generate(path, args.spans)
    size = path.stat().st_size
    n_spans = count_spans(path)
    py = sys.executable

    try:
        import orjson  # noqa: F401

        backends = ["stdlib", "orjson"]
    except ImportError:
        backends = ["stdlib"]
    load_at_start = os.getloadavg()
    baseline_runs: list[dict[str, float]] = []
    convert_runs: dict[str, list[dict[str, float]]] = {b: [] for b in backends}
    inproc_runs: list[dict[str, float]] = []
    cmd = [py, "-m", "toolspan", "convert", str(path), "--to", "events", "-o", os.devnull]
    for i in range(args.repeat):
        print(f"run {i + 1}/{args.repeat}: json.loads baseline ...", file=sys.stderr)
        baseline_runs.append(run_child([py, "-c", BASELINE, str(path)]))
        for backend in backends:
            print(
                f"run {i + 1}/{args.repeat}: toolspan convert, {backend} JSON (subprocess) ...",
                file=sys.stderr,
            )
            env = {**os.environ, "TOOLSPAN_JSON": "stdlib" if backend == "stdlib" else "auto"}
            convert_runs[backend].append(run_child(cmd, env))
        if not args.skip_inprocess:
            from toolspan.cli import main as cli_main

            print(
                f"run {i + 1}/{args.repeat}: toolspan convert (in-process, default JSON) ...", file=sys.stderr
            )
            t0, c0 = time.perf_counter(), time.process_time()
            if cli_main(cmd[3:]) != 0:
                raise SystemExit("in-process convert failed")
            inproc_runs.append({"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0})

    base = best(baseline_runs)
    per_backend: dict[str, Any] = {}
    for backend in backends:
        conv = best(convert_runs[backend])
        paired_cpu = [
            c["cpu_s"] / b["cpu_s"] for c, b in zip(convert_runs[backend], baseline_runs, strict=True)
        ]
        paired_wall = [
            c["wall_s"] / b["wall_s"] for c, b in zip(convert_runs[backend], baseline_runs, strict=True)
        ]
        per_backend[backend] = {
            **conv,
            "paired_ratio_cpu_median": median(paired_cpu),
            "paired_ratio_cpu_rounds": paired_cpu,
            "paired_ratio_wall_median": median(paired_wall),
            "spans_per_second_wall": n_spans / conv["wall_s"],
            "spans_per_second_cpu": n_spans / conv["cpu_s"],
            "ratio_to_json_loads_cpu": conv["cpu_s"] / base["cpu_s"],
            "ratio_to_json_loads_wall": conv["wall_s"] / base["wall_s"],
            "peak_rss_fraction_of_input": conv["peak_rss_bytes"] / size,
            "met_ratio_cpu": conv["cpu_s"] / base["cpu_s"] <= 3.0,
            "met_peak_rss": conv["peak_rss_bytes"] < size,
        }
    results: dict[str, Any] = {
        "input": {"path_name": path.name, "bytes": size, "spans": n_spans, "lines": None},
        "command": "toolspan convert FILE --to events -o /dev/null",
        "json_loads_baseline": base,
        "convert_subprocess": per_backend,
        "convert_inprocess_default_json": best(inproc_runs) if inproc_runs else None,
        "instructions": instruction_ratios(path, args.instructions, backends, py)
        if args.instructions
        else None,
        "targets": {"ratio_to_json_loads_max": 3.0, "peak_rss_below_input_bytes": True},
        "repeat": args.repeat,
        "python": platform.python_version(),
        "machine": f"{platform.machine()} {os.cpu_count()} CPUs",
        "load_average_at_start": load_at_start,
        "load_average_at_end": os.getloadavg(),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    with path.open("rb") as f:
        results["input"]["lines"] = sum(1 for _ in f)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
