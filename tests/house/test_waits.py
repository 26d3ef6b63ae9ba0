"""Tests say what they wait for, and draw no unseeded random numbers.

A ``sleep`` in a test is a guess at how long something takes: to prove that something does *not* happen it
proves nothing (the thing may come after the sleep), and a sleep waiting for something that does happen
is slow on a quiet machine and flaky on a busy one. So a test waits on an event, a condition or a hook that
says the thing was considered, and a sweep runs when the test calls it. The sleeps left are listed below,
each with what it is for: a poll of a condition until a deadline, a tool that hangs until it is cancelled,
a pace a real client keeps. ``sleep(0)`` (a turn of the event loop, not a wait) is no sleep here.

``random``'s module functions draw from a generator seeded by the clock, and ``secrets``, ``uuid.uuid4``
and ``os.urandom`` from the system: a test draws from its own ``random.Random(seed)`` or takes a fixed
value, so a failure comes back on the next run. Only the end-to-end tests name their runs uniquely (a real
Phoenix or Jaeger keeps every run's data: a fixed name would read the last run's).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from tests.support.paths import TESTS

# (file under tests/, the function holding the sleep) -> why it sleeps.
ALLOWED: dict[tuple[str, str], str] = {
    # Polls of a condition until a deadline (each checks the condition first, then sleeps a little).
    ("approvals/test_book.py", "_wait_for"): "polls the book until a call is booked",
    ("approvals/test_book.py", "test_a_call_that_stops_waiting_stops_polling_the_book"): (
        "polls until no poller is left, then asserts it"
    ),
    ("apps/approvals_live_app.py", "wait_for_signal"): "a child app polls for its signal file",
    ("apps/frontend_live_app.py", "_wait_for"): "a child app polls a condition until a deadline",
    (
        "decisions/test_hostile.py",
        "test_a_rebooked_call_id_never_hands_its_decision_to_the_call_waiting.operator",
    ): "polls the book until the call waits",
    ("e2e/conftest.py", "Proc.wait_until"): "polls a real process until it answers",
    ("e2e/conftest.py", "Phoenix.wait_for_spans"): "polls Phoenix until the spans are stored",
    ("e2e/otel_stack.py", "Jaeger.wait_for_trace"): "polls Jaeger until the trace is stored",
    ("server/ingest/test_parsers.py", "_wait_gone"): "polls until the parse workers have exited",
    ("server/test_hangups.py", "test_clients_hanging_up_mid_catch_up_leave_no_stream_open"): (
        "polls /healthz until no stream is open, then asserts it"
    ),
    (
        "server/test_hangups.py",
        "test_dropped_and_hung_up_streams_and_a_shutdown_with_streams_open_log_nothing_else",
    ): (
        "polls /healthz until the dropped client is counted; then gives the held streams' requests half a"
        " second to reach the server before it is stopped"
    ),
    ("server/test_live.py", "_post_until_stored"): "retries a send until the server (restarted) stores it",
    ("server/test_live.py", "test_resume_across_sigkills_receives_exactly_the_full_sequence.client"): (
        "a client reconnecting after its server was killed"
    ),
    (
        "server/test_replicas.py",
        "test_three_replicas_four_senders_a_replica_killed_and_the_database_restarted.sender",
    ): "a sender retrying on another replica",
    (
        "server/test_replicas.py",
        "test_three_replicas_four_senders_a_replica_killed_and_the_database_restarted.client",
    ): "a client reconnecting to another replica",
    ("support/postgres.py", "Postgres.wait_ready"): "polls PostgreSQL until it accepts connections",
    ("support/server.py", "wait_for"): "the tests' poll of a condition until a deadline",
    ("support/server.py", "Server.start"): "polls a starting server until it answers /healthz",
    # Bodies that hang until they are cancelled (the test cancels them, or asserts the call never ran).
    ("approvals/test_server.py", "test_the_callers_own_cancellation_stays_a_cancellation.slow"): (
        "a tool body that hangs until the caller cancels it"
    ),
    (
        "approvals/test_server.py",
        "test_a_request_cancels_a_running_async_body_and_the_caller_gets_a_result.slow",
    ): "a tool body that hangs until a cancel request ends it",
    ("decisions/test_hostile.py", "test_calls_that_never_started_their_body_are_not_counted_offline.never"): (
        "an approver that never answers (the call times out)"
    ),
    ("instrument/test_tool.py", "test_cancelled_task_is_cancelled_not_failed.slow"): (
        "a tool body that hangs until its task is cancelled"
    ),
    ("server/test_resources.py", "_asgi_get.receive"): "an ASGI client that never disconnects",
    (
        "apps/control_live_app.py",
        "watch_async",
    ): "a child app's tool that runs until a cancel request ends it",
    ("apps/control_live_app.py", "watch_sync"): "a child app's tool that runs until a cancel request ends it",
    ("apps/control_live_app.py", "watch_gen"): "a child app's tool that runs until a cancel request ends it",
    ("apps/server_live_app.py", "slow_tool"): "a child app's tool that is still running while the test looks",
    # The pace of a real client, server or process (what is tested is what happens at that pace).
    (
        "approvals/test_approval.py",
        "test_arun_runs_a_blocking_sync_approver_off_the_event_loop.main.decide_soon",
    ): "decides on the loop while the sync approver blocks in its thread: the loop must stay free",
    ("apps/server_stream_app.py", "step"): "a child app's steps, apart in time, streamed as they happen",
    ("decisions/test_replay_faithful.py", "_Endless.do_GET"): "a server that drips its answer slowly",
    ("e2e/shipping_app.py", "staged"): "a child app's stages, apart in time",
    ("e2e/test_faults.py", "_outage"): "how long a backend stays down",
    ("server/test_hangups.py", "_hang_up_mid_catch_up"): "a client reading slowly before it hangs up",
    ("server/test_live.py", "test_resume_across_sigkills_receives_exactly_the_full_sequence.sender"): (
        "a sender's seeded pace"
    ),
    ("server/test_live.py", "test_resume_across_sigkills_receives_exactly_the_full_sequence"): (
        "the seeded times between the server's kills"
    ),
    ("support/backend.py", "_trickle"): "a backend that trickles its answer",
    # Time passing is what is tested.
    (
        "server/test_control_hostile.py",
        "test_a_new_waiting_call_is_listed_however_many_never_ended_and_the_stale_ones_age_out",
    ): (
        "the call is still listed once more than --stale-after has passed since it arrived (its application"
        " kept asking): the inbox's staleness is computed at each read from the records' times, no sweep"
    ),
    ("server/test_resources.py", "test_a_decision_on_one_replica_wakes_the_long_poll_on_another_at_once"): (
        "lets the long poll start waiting on one replica before the other decides (a decision before it"
        " only makes the poll return sooner: the test cannot pass by it)"
    ),
}
# ``random``'s names a test may use: the generator classes, which a test seeds.
SEEDED = frozenset({"Random", "SystemRandom"})
# The draws from the system or the clock: module -> its names that draw (``None``: every name).
DRAWS: dict[str, frozenset[str] | None] = {
    "random": None,
    "secrets": None,
    "uuid": frozenset({"uuid1", "uuid4"}),
    "os": frozenset({"urandom", "getrandom"}),
}
# The files that may draw, each with why.
UNIQUE: dict[str, str] = {
    "e2e/test_faults.py": "a unique project name in a real Phoenix, which keeps every run's spans",
    "e2e/test_jaeger_cli.py": "a unique service name in a real Jaeger, which keeps every run's traces",
    "e2e/test_phoenix_e2e.py": "a unique project name in a real Phoenix, which keeps every run's spans",
}


@functools.cache
def _sources(root: Path) -> list[tuple[str, ast.Module]]:
    """Each file under ``root`` that names ``sleep`` or a module of ``DRAWS`` (its path from ``root``) and
    its syntax tree, parsed once for the checks (a file that names none holds no call of any)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "node_modules" not in path.parts and any(word in text for word in ("sleep", *DRAWS)):
            found.append((path.relative_to(root).as_posix(), ast.parse(text)))
    return found


def sleeps(root: Path) -> dict[tuple[str, str], list[int]]:
    """``(file, function) -> lines`` of every sleep under ``root`` but ``sleep(0)``."""
    found: dict[tuple[str, str], list[int]] = {}

    def visit(node: ast.AST, where: str, names: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, where, [*names, child.name])
                continue
            if isinstance(child, ast.Call) and _called(child.func) == "sleep" and not _zero(child):
                key = (where, ".".join(names) or "<module>")
                found.setdefault(key, []).append(child.lineno)
            visit(child, where, names)

    for where, tree in _sources(root):
        visit(tree, where, [])
    return found


def unseeded(root: Path) -> list[str]:
    """``file:line module.name`` of every draw of ``DRAWS`` (a use, or an import by name) under ``root``."""
    found = []
    for where, tree in _sources(root):
        for node in ast.walk(tree):
            used: list[tuple[str, str]] = []
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                used = [(node.value.id, node.attr)]
            elif isinstance(node, ast.ImportFrom) and node.module in DRAWS:
                used = [(node.module, alias.name) for alias in node.names]
            found += [
                f"{where}:{getattr(node, 'lineno', 0)} {module}.{name}"
                for module, name in used
                if _draws(module, name)
            ]
    return found


def _draws(module: str, name: str) -> bool:
    if module not in DRAWS or (module == "random" and name in SEEDED):
        return False
    names = DRAWS[module]
    return names is None or name in names


def _called(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _zero(call: ast.Call) -> bool:
    return len(call.args) == 1 and isinstance(call.args[0], ast.Constant) and call.args[0].value == 0


def test_every_sleep_in_the_tests_is_listed_with_its_reason() -> None:
    found = sleeps(TESTS)
    assert sorted(set(found) - set(ALLOWED)) == [], (
        "wait on an event or a condition (this module's docstring)"
    )


def test_every_listed_sleep_is_still_there() -> None:
    assert sorted(set(ALLOWED) - set(sleeps(TESTS))) == []


def test_no_test_draws_unseeded_random_numbers() -> None:
    assert [f for f in unseeded(TESTS) if f.split(":")[0] not in UNIQUE] == []


def test_every_file_listed_as_drawing_still_draws() -> None:
    assert sorted(set(UNIQUE) - {f.split(":")[0] for f in unseeded(TESTS)}) == []


def test_a_sleep_and_an_unseeded_draw_are_found(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(
        "import asyncio, os, random, secrets, time, uuid\nfrom random import choice\n\n"
        "class C:\n    async def wait(self):\n"
        "        await asyncio.sleep(0)\n        await asyncio.sleep(0.2)\n"
        "\ndef test():\n    time.sleep(1)\n    random.Random(3).random()\n    return random.random()\n"
        "\nNAMES = [uuid.uuid4(), uuid.uuid5(uuid.NAMESPACE_URL, 'x'), secrets.token_hex(), os.urandom(4)]\n"
    )
    assert sleeps(tmp_path) == {("t.py", "C.wait"): [7], ("t.py", "test"): [10]}
    assert unseeded(tmp_path) == [
        "t.py:2 random.choice",
        "t.py:12 random.random",
        "t.py:14 uuid.uuid4",
        "t.py:14 secrets.token_hex",
        "t.py:14 os.urandom",
    ]
