"""Faults: the collector (rotel) goes down and comes back while an instrumented app keeps calling tools.

The app (agent_app.py ``faults``) is set up by ``toolspan.configure()`` with a capped export queue
(``OTEL_BSP_MAX_QUEUE_SIZE``) and reports, per phase, its tools' results and per-call times, the
queue's length, and which spans it ended and handed to the exporter. The test counts what reached
Phoenix and what was lost, and records the numbers in ``.e2e/results/faults.json``.

Phases: ``up`` (collector running), ``down`` (collector stopped: more spans than the queue holds),
``back`` (collector restarted on the same port while the exporter is still retrying). Within the OTLP
exporter's retry window (``OTEL_EXPORTER_OTLP_TIMEOUT``, 10 s) the batch in flight and what the queue
kept are delivered once the collector is back; what the capped queue had to drop is lost. The SDK's
queue drops its *oldest* spans when full, so the newest ones survive.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

QUEUE_CAP = 256
BATCH = 64
SCHEDULE_DELAY_MS = 100
EXPORT_TIMEOUT_S = 10
UP_CALLS, DOWN_CALLS, BACK_CALLS = 300, 1000, 50
OUTAGE_S = 0.5  # how long the collector stays down after the down phase's calls (well within the window)
# Loose bound, not a speed test: a tool that waited on the exporter would take the retry window (seconds).
MAX_CALL_WHILE_DOWN_US = 2_000_000


class App:
    """The interactive faults app: one command per line in, one JSON line out."""

    def __init__(self, app: Path, env: dict[str, str], log: Path) -> None:
        self._log = log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, str(app), "faults"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            bufsize=1,
        )
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.hello = self._answer(60)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)

    def _answer(self, timeout_s: float) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout_s)
        except queue.Empty:
            pytest.fail(f"the app did not answer within {timeout_s} s (exit {self.proc.poll()})")
        return dict(json.loads(line))

    def ask(self, command: str, timeout_s: float = 120) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self._answer(timeout_s)

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                self.ask("quit", timeout_s=60)
        finally:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
            self._log.close()


def test_collector_down_and_restarting(
    rotel: Any, phoenix: Any, e2e: Any, tmp_path: Path, results_dir: Path
) -> None:
    project = f"faults-{uuid.uuid4().hex[:8]}"
    env = e2e.app_env(
        rotel.endpoint("grpc"),
        "grpc",
        project,
        OTEL_BSP_MAX_QUEUE_SIZE=str(QUEUE_CAP),
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE=str(BATCH),
        OTEL_BSP_SCHEDULE_DELAY=str(SCHEDULE_DELAY_MS),
        OTEL_EXPORTER_OTLP_TIMEOUT=str(EXPORT_TIMEOUT_S),
    )
    app = App(e2e.APP, env, tmp_path / "app.log")
    try:
        # configure() honoured the cap, and the test can see the queue and the exporter.
        assert app.hello == {"ready": True, "queue_cap": QUEUE_CAP, "introspection": True}
        phases = {"up": app.ask(f"run up {UP_CALLS}")}
        app.ask("flush")
        stats = app.ask("stats")
        phoenix.wait_for_spans(project, expected=len(stats["ended"]["up"]))

        down_at = time.monotonic()
        rotel.stop()
        steps = {"collector_stop": time.monotonic() - down_at}
        phases["down"] = app.ask(f"run down {DOWN_CALLS}")
        steps["down_phase"] = time.monotonic() - down_at - steps["collector_stop"]
        time.sleep(OUTAGE_S)
        steps["collector_start"] = rotel.start()  # same ports
        outage_s = time.monotonic() - down_at
        phases["back"] = app.ask(f"run back {BACK_CALLS}")  # the exporter is still backing off
        flush = app.ask("flush")
        stats = app.ask("stats")
    finally:
        app.close()

    ended: dict[str, list[str]] = stats["ended"]
    handed = set(stats["handed"])
    expected = len(handed)
    doc = phoenix.wait_for_spans(project, expected=expected, timeout_s=60)
    copies = Counter(span["context"]["span_id"] for span in doc["data"])
    arrived = set(copies)
    counts = {
        phase: {
            "ended": len(ids),
            "arrived": len(set(ids) & arrived),
            "lost": len(set(ids) - arrived),
            "dropped_by_queue": len(set(ids) - handed),
        }
        for phase, ids in ended.items()
    }
    failed_exports = [e for e in stats["exports"] if e["result"] != "SUCCESS"]
    record = {
        "queue_cap": QUEUE_CAP,
        "export_batch": BATCH,
        "outage_seconds": round(outage_s, 2),
        "outage_steps_seconds": {k: round(v, 3) for k, v in steps.items()},
        "final_flush_seconds": flush["seconds"],
        "counts": counts,
        "total": {
            "ended": sum(c["ended"] for c in counts.values()),
            "arrived": len(arrived),
            "lost": sum(c["lost"] for c in counts.values()),
        },
        "per_call_us": {
            phase: {k: p[k] for k in ("median_us", "p95_us", "max_us", "undecorated_median_us", "seconds")}
            for phase, p in phases.items()
        },
        "queue_max": stats["queue_max"],
        "max_rss_kb": stats["max_rss_kb"],
        "exports": {
            "count": len(stats["exports"]),
            "failed": len(failed_exports),
            "slowest_seconds": max(e["seconds"] for e in stats["exports"]),
        },
    }
    (results_dir / "faults.json").write_text(json.dumps(record, indent=2))
    print(json.dumps(record, indent=2))

    # Decorated tools never raise and return the right values, collector up, down or restarting.
    for name, phase in phases.items():
        assert phase["wrong"] == 0, name
        assert phase["raised_same"] == phase["failing_calls"], name
    assert phases["down"]["max_us"] < MAX_CALL_WHILE_DOWN_US, record["per_call_us"]
    # Memory stays bounded: the export queue never held more than its cap, and it is empty at the end.
    assert stats["queue_max"] <= QUEUE_CAP
    assert stats["queue_len"] == 0
    assert flush["flushed"] is True
    # Everything ended while the collector was up arrived.
    assert counts["up"]["lost"] == 0
    # Down: more spans than the queue holds, so the cap dropped some; every other span (the batch in
    # flight and what the queue kept) was delivered once the collector was back: no export failed.
    assert counts["down"]["dropped_by_queue"] > 0
    assert failed_exports == [], record
    assert counts["down"]["arrived"] > 0
    for phase in counts.values():
        assert phase["lost"] == phase["dropped_by_queue"], counts
    # Arrived once: Phoenix holds each delivered span exactly once.
    assert arrived == handed
    assert max(copies.values()) == 1
