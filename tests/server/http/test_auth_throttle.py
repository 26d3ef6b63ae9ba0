"""Guessing a bearer token, through ``toolspan serve``'s ASGI application in this process: after
``auth_failures`` wrong tokens from one client address within ``auth_window_s``, that address's requests
carrying a token are a 429 with ``Retry-After`` (the right token too: a guess is never confirmed) until its
oldest failure is that old; the right token from any other address is never refused; the table of addresses
is bounded. The throttle's clock is the test's own: nothing sleeps."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.asgi import AsgiAnswer, AsgiClient
from toolspan.server import ServerConfig, build_app, open_store
from toolspan.server._http.auth import FailureThrottle

TOKEN = "app-token-1"
DECIDER = "decider-token-1"
LIMIT = 5
WINDOW_S = 60.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Guarded:
    """The application with an application token and a decider, its throttle on ``clock``."""

    def __init__(self, tmp: Path, limit: int = LIMIT) -> None:
        self.store = open_store(str(tmp / "store.db"))
        config = ServerConfig(
            db=self.store.path,
            parse_workers=0,
            token=TOKEN,
            deciders=(("alice", DECIDER),),
            auth_failures=limit,
            auth_window_s=WINDOW_S,
        )
        app, state = build_app(config, self.store)
        self.clock = Clock()
        state.auth_failures.clock = self.clock
        self.throttle = state.auth_failures
        self.client = AsgiClient(app)

    def get(self, token: str | None, address: str, path: str = "/api/traces") -> AsgiAnswer:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        return self.client.request("GET", path, headers=headers, client=address)


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[Guarded]:
    found = Guarded(tmp_path)
    try:
        with found.client:
            yield found
    finally:
        found.store.close()


def _throttled(answer: AsgiAnswer, retry_after: int) -> None:
    assert answer.status == 429, (answer.status, answer.body[:200])
    assert answer.headers["retry-after"] == str(retry_after)
    body = answer.json()
    assert body["retry_after_s"] == retry_after
    assert "too many wrong bearer tokens from this address" in body["error"]


def test_wrong_tokens_from_one_address_slow_it_down_and_never_the_right_token_from_elsewhere(
    guarded: Guarded,
) -> None:
    for _ in range(LIMIT):
        assert guarded.get("guess", "203.0.113.7").status == 401
    # The next guess is not looked at, and neither is the right token from that address.
    _throttled(guarded.get("guess", "203.0.113.7"), 60)
    _throttled(guarded.get(TOKEN, "203.0.113.7"), 60)
    _throttled(guarded.get("guess", "203.0.113.7", "/api/whoami"), 60)
    # The right tokens from another address are answered as ever, and so are its wrong ones.
    assert guarded.get(TOKEN, "198.51.100.1").status == 200
    assert guarded.get(DECIDER, "198.51.100.1", "/api/whoami").json()["name"] == "alice"
    assert guarded.get("guess", "198.51.100.1").status == 401
    # What needs no token is still served to the address that guessed.
    assert guarded.get(None, "203.0.113.7", "/healthz").status == 200
    # Retry-After counts down with the clock; once the oldest failure is a window old, a token is looked at.
    guarded.clock.now += 45
    _throttled(guarded.get(TOKEN, "203.0.113.7"), 15)
    guarded.clock.now += 15
    assert guarded.get(TOKEN, "203.0.113.7").status == 200


def test_failures_older_than_the_window_do_not_count(guarded: Guarded) -> None:
    for _ in range(LIMIT - 1):
        assert guarded.get("guess", "192.0.2.1").status == 401
    guarded.clock.now += WINDOW_S
    for _ in range(LIMIT - 1):
        assert guarded.get("guess", "192.0.2.1").status == 401
    assert guarded.get(TOKEN, "192.0.2.1").status == 200


def test_a_guess_as_access_token_in_the_url_counts_as_well(guarded: Guarded) -> None:
    for _ in range(LIMIT):
        assert (
            guarded.client.request("GET", "/api/traces?access_token=guess", client="192.0.2.9").status == 401
        )
    answer = guarded.client.request("GET", f"/api/traces?access_token={TOKEN}", client="192.0.2.9")
    _throttled(answer, 60)


def test_no_limit_when_auth_failures_is_zero(tmp_path: Path) -> None:
    found = Guarded(tmp_path, limit=0)
    try:
        with found.client:
            for _ in range(50):
                assert found.get("guess", "192.0.2.2").status == 401
            assert found.get(TOKEN, "192.0.2.2").status == 200
    finally:
        found.store.close()


def test_the_table_of_addresses_is_bounded() -> None:
    clock = Clock()
    throttle = FailureThrottle(3, WINDOW_S, max_clients=100, clock=clock)
    for n in range(1000):
        throttle.failed(f"10.0.{n // 256}.{n % 256}")
    assert len(throttle) == 100
    # The addresses that failed last are those held.
    for _ in range(2):
        throttle.failed("10.0.3.231")
    assert throttle.wait_s("10.0.3.231") == WINDOW_S
    assert throttle.wait_s("10.0.0.0") == 0.0


_ADDRESSES = ["192.0.2.10", "192.0.2.11", "2001:db8::1"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(_ADDRESSES), st.sampled_from(["right", "wrong", "none"]), st.integers(0, 40)
        ),
        max_size=40,
    )
)
def test_any_sequence_of_guesses_answers_as_the_window_says(tmp_path: Path, steps: list[Any]) -> None:
    """A model of the throttle beside the server: each answer is 200, 401 or 429 as the failures of its
    address within the window say, never anything else."""
    found = Guarded(Path(tempfile.mkdtemp(dir=tmp_path)))
    failures: dict[str, list[float]] = {a: [] for a in _ADDRESSES}
    try:
        with found.client:
            for address, token, advance in steps:
                found.clock.now += advance
                now = found.clock.now
                recent = [t for t in failures[address] if t > now - WINDOW_S]
                blocked = token != "none" and len(recent) >= LIMIT and recent[-LIMIT] + WINDOW_S > now
                answer = found.get({"right": TOKEN, "wrong": "guess", "none": None}[token], address)
                expected = 429 if blocked else (200 if token == "right" else 401)
                assert answer.status == expected, (address, token, answer.body[:200])
                if token == "wrong" and not blocked:
                    failures[address].append(now)
    finally:
        found.store.close()
