"""The ``processes`` marker holds: ``tests/support/processes.py`` fails a test that starts a real process, or
uses a fixture that started one, without the marker; run here on a small suite of its own in a real pytest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO

SUITE = """
import multiprocessing
import subprocess
import sys

import pytest


@pytest.fixture(scope="module")
def child() -> str:
    return subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True, text=True).stdout


def test_unmarked_runs_a_child() -> None:
    subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.processes
def test_marked_runs_a_child() -> None:
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_unmarked_starts_a_multiprocessing_process() -> None:
    process = multiprocessing.get_context("spawn").Process(target=print)
    process.start()
    process.join()


@pytest.mark.processes
def test_marked_sets_the_module_fixture_up(child: str) -> None:
    assert child == "1\\n"


def test_unmarked_uses_the_fixture_another_test_set_up(child: str) -> None:
    assert child == "1\\n"


def test_stays_in_process() -> None:
    assert sum(range(4)) == 6
"""


@pytest.mark.processes
def test_a_process_started_without_the_marker_fails_the_test(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    processes: starts real processes\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rfE",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.support.processes",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    failed = sorted(
        line.split()[1].split("::")[1]
        for line in done.stdout.splitlines()
        if line.startswith(("FAILED", "ERROR"))
    )
    assert failed == [
        "test_unmarked_runs_a_child",
        "test_unmarked_starts_a_multiprocessing_process",
        "test_unmarked_uses_the_fixture_another_test_set_up",
    ], done.stdout + done.stderr
    assert "3 passed" in done.stdout
    python = Path(sys.executable).name
    assert f"starts a process in its call (subprocess.Popen {python} -c pass)" in done.stdout
    assert "starts a process in its call (multiprocessing SpawnProcess)" in done.stdout
    assert (
        f"starts a process in its setup (fixture 'child': subprocess.Popen {python} -c print(1))"
        in done.stdout
    )
