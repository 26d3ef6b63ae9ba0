"""``toolspan.replay`` faithful to the recording: calls matched on their whole arguments, never a body
run from a thread that lost the replay's context, failures, denials and closed generators replayed as
recorded, and a bounded fetch from a server."""

from __future__ import annotations

import asyncio
import dataclasses
import http.server
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import toolspan
from toolspan import semconv
from toolspan._decisions import replay_source as _replay_source
from toolspan.bridge.readers import from_readable_spans
from toolspan.config import Config, set_config
from toolspan.testing import capture_spans

bodies: Counter[str] = Counter()


@toolspan.tool
def echo(text: str) -> str:
    bodies["echo"] += 1
    return f"#{bodies['echo']} {text[-1]}"


@toolspan.tool
def fetch(url: str) -> str:
    bodies["fetch"] += 1
    return f"page {url[-3:]} (#{bodies['fetch']})"


@toolspan.tool
def lookup(key: str) -> str:
    bodies["lookup"] += 1
    raise KeyError(key)


@toolspan.tool
def count(n: int) -> Iterator[int]:
    bodies["count"] += 1
    yield from range(n)


@toolspan.tool
def transfer(amount: int) -> str:
    bodies["transfer"] += 1
    return f"sent {amount}"


@pytest.fixture(autouse=True)
def _fresh(fresh_config: None) -> Iterator[None]:
    bodies.clear()
    yield
    assert toolspan._instrument.hooks.ACTIVE[0] == 0


def _record(run: Any) -> tuple[Any, list[Any]]:
    with capture_spans() as finished:
        with toolspan.agent("assistant"):
            result = run()
        return result, list(finished())


def _replayed(spans: list[Any], run: Any) -> Any:
    bodies.clear()
    with capture_spans(), toolspan.replay(spans):
        result = run()
    assert bodies == Counter(), "a body ran during the replay"
    return result


@pytest.mark.parametrize("kind", ["thread-pool", "run_in_executor"])
def test_tools_called_from_threads_without_the_context_are_replayed_never_run(kind: str) -> None:
    def run() -> list[str]:
        with ThreadPoolExecutor(2) as pool:
            if kind == "thread-pool":
                return [pool.submit(fetch, f"https://x/{i:03}").result() for i in range(3)]

            async def go() -> list[str]:
                loop = asyncio.get_running_loop()
                return [await loop.run_in_executor(pool, fetch, f"https://x/{i:03}") for i in range(3)]

            return asyncio.run(go())

    seen, spans = _record(run)
    assert _replayed(spans, run) == seen


def test_a_context_less_call_while_two_replays_run_fails_rather_than_runs_its_body() -> None:
    _, spans = _record(lambda: fetch("https://x/001"))
    inside = threading.Event()
    leave = threading.Event()

    def hold() -> None:
        with toolspan.replay(spans):
            inside.set()
            leave.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert inside.wait(10)
        bodies.clear()
        with (
            toolspan.replay(spans),
            ThreadPoolExecutor(1) as pool,
            pytest.raises(toolspan.ReplayError, match="2 replays are active"),
        ):
            pool.submit(fetch, "https://x/001").result()
    finally:
        leave.set()
        holder.join()
    assert bodies == Counter()


def test_calls_that_differ_only_past_the_byte_budget_get_their_own_results() -> None:
    a, b = "x" * 20_000 + "A", "x" * 20_000 + "B"
    seen, spans = _record(lambda: [echo(a), echo(b)])
    assert seen == ["#1 A", "#2 B"]
    # In the other order: each call is told apart by the digest of its whole arguments.
    assert _replayed(spans, lambda: [echo(b), echo(a)]) == ["#2 B", "#1 A"]


def test_calls_that_differ_only_in_a_redacted_value_get_their_own_results() -> None:
    urls = ["https://api.example/?token=AAA", "https://api.example/?token=BBB"]
    seen, spans = _record(lambda: [fetch(u) for u in urls])
    (first, _) = sorted((s for s in spans if s.name == "execute_tool fetch"), key=lambda s: s.start_time)
    assert "[REDACTED]" in (first.attributes or {})[semconv.GEN_AI_TOOL_CALL_ARGUMENTS]
    assert _replayed(spans, lambda: [fetch(u) for u in reversed(urls)]) == list(reversed(seen))


def test_the_replaying_process_budget_does_not_change_which_calls_match() -> None:
    text = "y" * 20_000 + "Z"
    seen, spans = _record(lambda: echo(text))
    set_config(Config(max_attribute_bytes=64))
    assert _replayed(spans, lambda: echo(text)) == seen


def test_a_recording_that_cannot_tell_calls_apart_says_so() -> None:
    a, b = "x" * 20_000 + "A", "x" * 20_000 + "B"
    _, spans = _record(lambda: [echo(a), echo(b)])
    # As an older toolspan wrote it: the cut copy, no digest.
    old = [
        dataclasses.replace(
            s,
            attributes={
                k: v for k, v in s.attributes.items() if k != semconv.TOOLSPAN_TOOL_CALL_ARGUMENTS_DIGEST
            },
        )
        for s in from_readable_spans(spans)
    ]
    bodies.clear()
    with (
        capture_spans(),
        toolspan.replay(old),
        pytest.raises(toolspan.ReplayError, match="cannot tell call 1"),
    ):
        echo(b)
    assert bodies == Counter()


def _run_calls() -> list[dict[str, Any]]:
    def approve(call: Any) -> Any:
        return toolspan.Approval("deny", note="too risky") if call.arguments.get("amount", 0) > 100 else True

    calls = [
        {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"key": "k9"}'}},
        {"id": "c2", "type": "function", "function": {"name": "transfer", "arguments": '{"amount": 500}'}},
        {"id": "c3", "type": "function", "function": {"name": "transfer", "arguments": '{"amount": 5}'}},
    ]
    return toolspan.run_tool_calls(calls, [lookup, transfer], approve=approve, parallel=False)


def test_failures_and_denials_answer_the_model_exactly_as_recorded() -> None:
    seen, spans = _record(_run_calls)
    assert [r["content"] for r in seen] == ["KeyError: 'k9'", "PermissionDenied: too risky", '"sent 5"']
    assert _replayed(spans, _run_calls) == seen


def test_a_replayed_failure_is_still_the_exception_it_was() -> None:
    def fail() -> None:
        with pytest.raises(KeyError):
            lookup("k1")

    _, spans = _record(fail)
    bodies.clear()
    with capture_spans(), toolspan.replay(spans), pytest.raises(KeyError) as info:
        lookup("k1")
    assert isinstance(info.value, toolspan.ReplayedToolError)
    assert (type(info.value).__name__, str(info.value)) == ("KeyError", "'k1'")
    assert bodies == Counter()


def test_a_generator_closed_early_replays_what_it_yielded() -> None:
    def run() -> list[int]:
        gen = count(10)
        taken = [next(gen), next(gen)]
        gen.close()
        return taken

    seen, spans = _record(run)
    assert seen == [0, 1]
    assert _replayed(spans, run) == seen


class _Endless(http.server.BaseHTTPRequestHandler):
    drip = False

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        try:
            while True:
                self.wfile.write(b" " if self.drip else b" " * 65536)
                self.wfile.flush()
                if self.drip:
                    time.sleep(0.05)
        except OSError:
            pass

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize("drip", [False, True], ids=["endless", "slow-drip"])
def test_a_replay_from_a_server_reads_a_bounded_body_in_bounded_time(
    drip: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    handler = type("Handler", (_Endless,), {"drip": drip})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    monkeypatch.setattr(_replay_source, "MAX_BYTES", 1 << 20)
    monkeypatch.setattr(_replay_source, "DEADLINE_S", 0.5)
    url = f"http://127.0.0.1:{server.server_address[1]}/api/traces/{'a' * 32}"
    expected = "did not send trace .* within 0.5 s" if drip else "sent more than 1048576 bytes"
    try:
        with pytest.raises(toolspan.ReplayError, match=expected):
            toolspan.replay(url)
    finally:
        server.shutdown()
        server.server_close()
