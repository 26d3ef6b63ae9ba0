"""Faults: the collector (rotel) goes down and comes back while an instrumented app keeps calling tools.

The app (agent_app.py ``faults``) is set up by ``toolspan.configure()`` with a capped export queue
(``OTEL_BSP_MAX_QUEUE_SIZE``) and reports, per phase, its tools' results and per-call times, the
queue's length, and which spans it ended and handed to the exporter. The test counts what reached
Phoenix and what was lost, and records the numbers in ``.e2e/results/faults.json``.

Phases: ``up`` (collector running), ``down`` (collector stopped: more spans than the queue holds),
``back`` (collector restarted on the same port while the exporter may still be retrying). When the
collector is back within the OTLP exporter's retry window (``OTEL_EXPORTER_OTLP_TIMEOUT``, 10 s), the
batch in flight and what the queue kept are delivered; what the capped queue had to drop is lost. When
the outage outlasts the window (second test: 2 s window, 5 s outage), the batches the exporter held are
lost too, and counted. The SDK's queue drops its *oldest* spans when full, so the newest ones survive.
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
# The up and back phases stay below the cap (a burst beyond it drops spans even with the collector up).
UP_CALLS, DOWN_CALLS, BACK_CALLS = 200, 1000, 50
OUTAGE_S = 0.5  # how long the collector stays down after the down phase's calls (well within the window)
SHORT_EXPORT_TIMEOUT_S = 2  # a short retry window ...
LONG_OUTAGE_S = 5.0  # ... and an outage longer than it
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


def _outage(
    rotel: Any, phoenix: Any, e2e: Any, tmp_path: Path, export_timeout_s: int, outage_s: float
) -> dict[str, Any]:
    """Up, down (collector stopped for ``outage_s`` after the down phase's calls), back; then count.

    Returns the phases' answers, the app's final stats and the counts of what arrived in Phoenix.
    """
    project = f"faults-{uuid.uuid4().hex[:8]}"
    env = e2e.app_env(
        rotel.endpoint("grpc"),
        "grpc",
        project,
        OTEL_BSP_MAX_QUEUE_SIZE=str(QUEUE_CAP),
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE=str(BATCH),
        OTEL_BSP_SCHEDULE_DELAY=str(SCHEDULE_DELAY_MS),
        OTEL_EXPORTER_OTLP_TIMEOUT=str(export_timeout_s),
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
        time.sleep(outage_s)
        steps["collector_start"] = rotel.start()  # same ports
        steps["outage"] = time.monotonic() - down_at
        phases["back"] = app.ask(f"run back {BACK_CALLS}")  # the exporter may still be backing off
        flush = app.ask("flush")
        stats = app.ask("stats")
    finally:
        app.close()

    handed = set(stats["handed"])
    failed = set(stats["failed"])
    doc = phoenix.wait_for_spans(project, expected=len(handed - failed), timeout_s=60)
    copies = Counter(span["context"]["span_id"] for span in doc["data"])
    arrived = set(copies)
    counts = {
        phase: {
            "ended": len(ids),
            "arrived": len(set(ids) & arrived),
            "lost": len(set(ids) - arrived),
            "dropped_by_queue": len(set(ids) - handed),
            "lost_in_failed_exports": len(set(ids) & failed),
        }
        for phase, ids in stats["ended"].items()
    }
    record = {
        "queue_cap": QUEUE_CAP,
        "export_batch": BATCH,
        "export_timeout_seconds": export_timeout_s,
        "outage_steps_seconds": {k: round(v, 3) for k, v in steps.items()},
        "final_flush_seconds": flush["seconds"],
        "counts": counts,
        "total": {
            "ended": sum(c["ended"] for c in counts.values()),
            "arrived": len(arrived),
            "lost": sum(c["lost"] for c in counts.values()),
        },
        "tool_calls": {
            phase: {k: p[k] for k in ("median_us", "p95_us", "max_us", "undecorated_median_us", "seconds")}
            for phase, p in phases.items()
        },
        "queue_max": stats["queue_max"],
        "max_rss_kb": stats["max_rss_kb"],
        "exports": {
            "count": len(stats["exports"]),
            "failed": sum(e["result"] != "SUCCESS" for e in stats["exports"]),
            "slowest_seconds": max(e["seconds"] for e in stats["exports"]),
        },
    }
    print(json.dumps(record, indent=2))

    # Decorated tools never raise and return the right values, collector up, down or restarting.
    for name, phase in phases.items():
        assert phase["wrong"] == 0, name
        assert phase["raised_same"] == phase["failing_calls"], name
    assert phases["down"]["max_us"] < MAX_CALL_WHILE_DOWN_US, record["tool_calls"]
    # Memory stays bounded: the export queue never held more than its cap, and it is empty at the end.
    assert stats["queue_max"] <= QUEUE_CAP
    assert stats["queue_len"] == 0
    assert flush["flushed"] is True
    # Everything ended while the collector was up arrived.
    assert counts["up"]["lost"] == 0
    # Down: more spans than the queue holds, so the cap dropped some.
    assert counts["down"]["dropped_by_queue"] > 0
    # Every loss is accounted for: dropped at the cap or in an export that gave up; the rest arrived,
    # each exactly once.
    for phase in counts.values():
        assert phase["lost"] == phase["dropped_by_queue"] + phase["lost_in_failed_exports"], counts
    assert arrived == handed - failed
    assert max(copies.values()) == 1
    return record


def test_collector_restarts_within_the_retry_window(
    rotel: Any, phoenix: Any, e2e: Any, tmp_path: Path, results_dir: Path
) -> None:
    record = _outage(rotel, phoenix, e2e, tmp_path, EXPORT_TIMEOUT_S, OUTAGE_S)
    (results_dir / "faults.json").write_text(json.dumps(record, indent=2))
    counts = record["counts"]
    # Back within the window: the batch in flight and what the queue kept were delivered, no export
    # gave up, and the only losses are the spans the capped queue dropped.
    assert record["outage_steps_seconds"]["outage"] < EXPORT_TIMEOUT_S / 2
    assert record["exports"]["failed"] == 0, record
    assert counts["down"]["arrived"] > 0
    assert counts["back"]["lost"] == 0


def test_collector_down_longer_than_the_retry_window(
    rotel: Any, phoenix: Any, e2e: Any, tmp_path: Path, results_dir: Path
) -> None:
    record = _outage(rotel, phoenix, e2e, tmp_path, SHORT_EXPORT_TIMEOUT_S, LONG_OUTAGE_S)
    (results_dir / "faults-beyond-window.json").write_text(json.dumps(record, indent=2))
    counts = record["counts"]
    # The exporter gave up on what it held during the outage; spans ended after it came back arrived.
    assert record["exports"]["failed"] > 0, record
    assert counts["down"]["lost_in_failed_exports"] > 0
    assert counts["back"]["arrived"] > 0
