"""Faults: the collector (rotel) goes down and comes back while an instrumented app keeps calling tools.

The app (agent_app.py ``faults``) is set up by ``toolspan.configure()`` with a capped export queue
(``OTEL_BSP_MAX_QUEUE_SIZE``) and reports, per phase, its tools' results and per-call times, the
queue's length, and which spans it ended and handed to the exporter. The test counts what reached
Phoenix and what was lost, and records the numbers in ``.e2e/results/faults*.json``.

Phases: ``up`` (collector running), ``down`` (collector stopped), ``back`` (collector restarted on the
same port while the exporter may still be retrying). Three scenarios:

- within the cap (``faults-within-cap.json``): the outage ends fewer spans than the queue holds and the
  collector is back within the OTLP exporter's retry window (``OTEL_EXPORTER_OTLP_TIMEOUT``, 10 s):
  every span ended while it was down arrives, none is lost.
- beyond the cap (``faults.json``): the outage ends more spans than the queue holds; the batch in
  flight and what the queue kept are delivered, what the capped queue had to drop is lost. The SDK's
  queue drops its *oldest* spans when full, so the newest ones survive.
- beyond the window (``faults-beyond-window.json``: 2 s window, 5 s outage): the batches the exporter
  held are lost too, and counted.

Phoenix keeps one row per span id (a re-sent span is ignored), so "exactly once" is checked on the
sending side too: no span was handed to the exporter twice.
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

pytestmark = [pytest.mark.e2e, pytest.mark.processes]

QUEUE_CAP = 256
BATCH = 64
SCHEDULE_DELAY_MS = 100
EXPORT_TIMEOUT_S = 10
# The up and back phases stay below the cap (a burst beyond it drops spans even with the collector up).
UP_CALLS, DOWN_CALLS, BACK_CALLS = 200, 1000, 50
FEW_DOWN_CALLS = 100  # with its failing calls, fewer spans than QUEUE_CAP
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
    rotel: Any,
    phoenix: Any,
    e2e: Any,
    tmp_path: Path,
    results_path: Path,
    export_timeout_s: int,
    outage_s: float,
    down_calls: int = DOWN_CALLS,
) -> dict[str, Any]:
    """Up, down (``down_calls`` tool calls, then the collector stays stopped for ``outage_s``), back;
    then count. Writes the record (counts, times, exports) to ``results_path`` and prints it before
    asserting, so a failed run leaves its numbers too; returns it."""
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
        stopped_at = time.monotonic()
        steps = {"collector_stop": stopped_at - down_at}
        phases["down"] = app.ask(f"run down {down_calls}")
        steps["down_phase"] = time.monotonic() - stopped_at
        time.sleep(outage_s)
        restart_at = time.monotonic()
        steps["collector_start"] = rotel.start()  # same ports
        steps["outage"] = time.monotonic() - down_at
        phases["back"] = app.ask(f"run back {BACK_CALLS}")  # the exporter may still be backing off
        flush = app.ask("flush")
        stats = app.ask("stats")
    finally:
        app.close()

    handed = set(stats["handed"])
    handed_times = Counter(stats["handed"])
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
            "handed_more_than_once": sum(handed_times[i] > 1 for i in set(ids)),
        }
        for phase, ids in stats["ended"].items()
    }
    # Exports that began while the collector was down: their first attempt could not succeed, so a
    # SUCCESS means the exporter retried and delivered after the restart.
    down_ids = set(stats["ended"]["down"])
    while_down = [e for e in stats["exports"] if stopped_at <= e["start"] < restart_at]
    record = {
        "queue_cap": QUEUE_CAP,
        "export_batch": BATCH,
        "export_timeout_seconds": export_timeout_s,
        "down_calls": down_calls,
        "collector_starts": rotel.starts,
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
        "exports_started_while_down": {
            "count": len(while_down),
            "succeeded": sum(e["result"] == "SUCCESS" for e in while_down),
            "failed": sum(e["result"] != "SUCCESS" for e in while_down),
            "spans": sum(e["spans"] for e in while_down),
            "down_spans": sum(
                len(down_ids & set(stats["handed"][e["first"] : e["first"] + e["spans"]])) for e in while_down
            ),
            "seconds": [e["seconds"] for e in while_down],
        },
    }
    results_path.write_text(json.dumps(record, indent=2))
    print(f"\n{results_path.name}:")
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
    # Every tool call, failing ones included, ended one span, recorded under its phase.
    for name, phase in phases.items():
        assert counts[name]["ended"] == phase["calls"] + phase["failing_calls"], name
    # The collector was stopped once and restarted once, on the same ports.
    assert rotel.starts == 2
    # The exporter tried while the collector was down (the outage was felt, not slept through).
    assert record["exports_started_while_down"]["count"] > 0, record["exports_started_while_down"]
    # Everything ended while the collector was up arrived.
    assert counts["up"]["lost"] == 0
    # Every loss is accounted for: dropped at the cap or in an export that gave up; the rest arrived,
    # each exactly once.
    for phase in counts.values():
        assert phase["lost"] == phase["dropped_by_queue"] + phase["lost_in_failed_exports"], counts
    assert arrived == handed - failed
    # Once: the processor handed no span to the exporter twice, and Phoenix lists each span once.
    assert all(c["handed_more_than_once"] == 0 for c in counts.values()), counts
    assert max(copies.values()) == 1
    return record


def test_collector_restarts_within_the_retry_window(
    rotel: Any, phoenix: Any, e2e: Any, tmp_path: Path, results_dir: Path
) -> None:
    results_path = results_dir / "faults.json"
    record = _outage(rotel, phoenix, e2e, tmp_path, results_path, EXPORT_TIMEOUT_S, OUTAGE_S)
    counts = record["counts"]
    # Down: more spans than the queue holds, so the cap dropped some.
    assert counts["down"]["ended"] > QUEUE_CAP
    assert counts["down"]["dropped_by_queue"] > 0
    # Back within the window: the batch in flight and what the queue kept were delivered, no export
    # gave up, and the only losses are the spans the capped queue dropped.
    assert record["outage_steps_seconds"]["outage"] < EXPORT_TIMEOUT_S / 2
    assert record["exports"]["failed"] == 0, record
    assert counts["down"]["arrived"] > 0
    assert counts["back"]["lost"] == 0


def test_collector_down_longer_than_the_retry_window(
    rotel: Any, phoenix: Any, e2e: Any, tmp_path: Path, results_dir: Path
) -> None:
    results_path = results_dir / "faults-beyond-window.json"
    record = _outage(rotel, phoenix, e2e, tmp_path, results_path, SHORT_EXPORT_TIMEOUT_S, LONG_OUTAGE_S)
    counts = record["counts"]
    assert counts["down"]["dropped_by_queue"] > 0
    # The exporter gave up on what it held during the outage; spans ended after it came back arrived.
    assert record["exports"]["failed"] > 0, record
    assert counts["down"]["lost_in_failed_exports"] > 0
    assert counts["back"]["arrived"] > 0


def test_collector_restarts_within_the_retry_window_with_fewer_spans_than_the_cap(
    rotel: Any, phoenix: Any, e2e: Any, tmp_path: Path, results_dir: Path
) -> None:
    results_path = results_dir / "faults-within-cap.json"
    record = _outage(
        rotel, phoenix, e2e, tmp_path, results_path, EXPORT_TIMEOUT_S, OUTAGE_S, down_calls=FEW_DOWN_CALLS
    )
    counts = record["counts"]
    down = counts["down"]
    # The setting: the outage ended fewer spans than the queue holds, and the collector was back well
    # within the exporter's retry window.
    assert 0 < down["ended"] < QUEUE_CAP, down
    assert record["outage_steps_seconds"]["outage"] < EXPORT_TIMEOUT_S / 2, record["outage_steps_seconds"]
    # The exporter held spans of the outage while the collector was down, retried, and delivered them
    # once it was back.
    while_down = record["exports_started_while_down"]
    assert while_down["failed"] == 0, while_down
    assert while_down["succeeded"] > 0, while_down
    assert while_down["down_spans"] > 0, while_down
    # Every span ended during the outage arrived, exactly once: none dropped, none in a failed export.
    assert down == {
        "ended": down["ended"],
        "arrived": down["ended"],
        "lost": 0,
        "dropped_by_queue": 0,
        "lost_in_failed_exports": 0,
        "handed_more_than_once": 0,
    }, down
    assert record["exports"]["failed"] == 0, record["exports"]
    # And nothing else was lost either.
    assert record["total"]["lost"] == 0, counts
    assert record["total"]["arrived"] == record["total"]["ended"], record["total"]
