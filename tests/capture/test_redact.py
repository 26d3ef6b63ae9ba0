"""Redaction: secret keys in every container shape, and the secrets spelled out inside text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolspan._capture.redact import redaction
from toolspan._capture.serialize import dumps, redact_text
from toolspan.config import DEFAULT_REDACT_KEYS, REDACTED, Config, normalize_key

CONFIG = Config()
R = REDACTED


def parsed(value: Any, config: Config = CONFIG) -> Any:
    text = dumps(value, config)
    assert len(text.encode("utf-8")) <= config.max_attribute_bytes
    return json.loads(text)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # header tuples and lists of pairs, str or bytes
        ([("Authorization", "Bearer abc"), ("Accept", "*/*")], [["Authorization", R], ["Accept", "*/*"]]),
        ([["X-Api-Key", "k1"], ["page", "2"]], [["X-Api-Key", R], ["page", "2"]]),
        ((b"Cookie", b"sid=1"), ["Cookie", R]),
        ({"headers": ((b"authorization", b"Basic dXNlcjpwYXNz"),)}, {"headers": [["authorization", R]]}),
        # bytes keys
        ({b"api_key": "k1", b"model": "m"}, {"api_key": R, "model": "m"}),
        # URL query strings and form bodies: the value goes, the URL stays
        (
            "https://api.example.com/v1/search?q=paris&api_key=k1&token=t2#top",
            f"https://api.example.com/v1/search?q=paris&api_key={R}&token={R}#top",
        ),
        ("grant_type=password&password=hunter2&scope=read", f"grant_type=password&password={R}&scope=read"),
        # header strings
        ("Authorization: Bearer eyJhbGciOi.x.y", f"Authorization: {R}"),
        ("authorization: Basic dXNlcjpwYXNz", f"authorization: {R}"),
        ("Accept: */*\r\nX-Api-Key: k1\r\nHost: h", f"Accept: */*\r\nX-Api-Key: {R}\r\nHost: h"),
        ("Cookie: sid=abc; theme=dark", f"Cookie: {R}"),
        ("Set-Cookie: sid=abc; Path=/; HttpOnly", f"Set-Cookie: {R}"),
        ("curl -H 'Authorization: Bearer abc' https://h", f"curl -H 'Authorization: {R}' https://h"),
        ("Bearer abc.def", f"Bearer {R}"),
        ("Basic dXNlcjpwYXNz", f"Basic {R}"),
        # passwords in URLs and DSNs
        ("postgres://app:s3cr3t@db:5432/main", f"postgres://app:{R}@db:5432/main"),
        ("redis://:p@ss@cache:6379/0", f"redis://:{R}@cache:6379/0"),
        ("host=db user=app password=s3cr3t dbname=main", f"host=db user=app password={R} dbname=main"),
        # JSON or Python text inside a string, env lines, YAML
        ('{"api_key": "k1", "n": 2}', f'{{"api_key": "{R}", "n": 2}}'),
        ("{'password': 'pw', 'user': 'bob'}", f"{{'password': '{R}', 'user': 'bob'}}"),
        ("OPENAI_API_KEY=sk-abc\nDEBUG=1", f"OPENAI_API_KEY={R}\nDEBUG=1"),
        ('password: "pw"\nuser: bob', f'password: "{R}"\nuser: bob'),
        # secrets in a bytes value, and in a dict key
        (b"Authorization: Bearer abc", f"Authorization: {R}"),
        ({"https://h/?token=t1": 1}, {f"https://h/?token={R}": 1}),
    ],
)
def test_secret_forms_are_redacted(value: Any, expected: Any) -> None:
    assert parsed(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        {"max_tokens": 512, "tokens": 3, "keyboard": "qwerty", "author": "ann"},
        [("max_tokens", 5), ("page", 2)],
        "https://example.com/search?q=tokens&max_tokens=5&page=2",
        "user@example.com wrote: basic usage of the API",
        "Note: see https://example.com:8080/a?b=c",
        "ratio=3:2, time 10:30",
        ["Authorization", "Accept", "Cookie"],  # names alone are not secrets
    ],
)
def test_non_secrets_are_kept(value: Any) -> None:
    assert dumps(value, CONFIG) == json.dumps(value, ensure_ascii=False)


def test_custom_keys_apply_to_text_and_pairs() -> None:
    config = Config(redact_keys=DEFAULT_REDACT_KEYS | {"ssn"})
    assert parsed(["SSN", "1"], config) == ["SSN", R]
    assert parsed("ssn=123-45&x=1", config) == f"ssn={R}&x=1"


def test_redact_text_cuts_to_the_budget_with_the_marker() -> None:
    config = Config(max_attribute_bytes=64)
    out = redact_text("token=abc " + "x" * 100, config)
    assert out == f"token={R} " + "x" * 23 + "...[truncated 77 chars]"  # of the 117 redacted chars
    assert len(out) <= 64


def test_a_cut_never_keeps_part_of_a_secret() -> None:
    # The cut falls inside the secret value: what is kept of it is still redacted.
    text = "a" * 90 + "&api_key=" + "K" * 50
    out = parsed({"u": text}, Config(max_attribute_bytes=128))
    assert "K" not in json.dumps(out)


def test_long_texts_are_scanned_in_linear_time() -> None:
    # A regex that backtracks quadratically would not finish this within the test run.
    assert redaction(CONFIG.redact_keys).text("a" * 200_000 + "=") == "a" * 200_000 + "="


# --- property: a planted secret never survives, in any form, at any depth -------------------------------

SECRET_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
secrets_ = st.text(SECRET_CHARS, min_size=10, max_size=30).map(lambda s: "SK9" + s)
secret_keys = st.sampled_from(
    [
        "api-key",
        "x_api_key",
        "Authorization",
        "passwd",
        "client_secret",
        "refresh_token",
        "Set-Cookie",
        "PRIVATE_KEY",
    ]
)
plain = st.text("abcdefghijklmnopqrstuvwxyz _", max_size=10).filter(
    lambda text: not normalize_key(text).endswith(tuple(DEFAULT_REDACT_KEYS))  # e.g. "sessionkey"
)


@st.composite
def secret_form(draw: st.DrawFn) -> Any:
    s, key = draw(secrets_), draw(secret_keys)
    form = draw(st.integers(0, 16))
    forms: list[Any] = [
        {key: s},
        [(key, s)],
        [[key, s]],
        (key.encode(), s.encode()),
        {key.encode(): s},
        f"https://api.example.com/v1/x?page=2&{key}={s}&q=1",
        f"{key}: {s}",
        f"Authorization: Bearer {s}",
        f"Authorization: Basic {s}",
        f"Cookie: session={s}; theme=dark",
        f"Set-Cookie: id={s}; Path=/; HttpOnly",
        f"postgres://user:{s}@db.example.com:5432/app",
        f"host=db user=app {key}={s} dbname=x",
        json.dumps({key: s, "n": 1}),
        repr({key: s}),
        f"Bearer {s}".encode(),
        f"{key}={s}\nDEBUG=1",
    ]
    return forms[form]


def nest(children: Any) -> Any:
    return (
        st.dictionaries(plain, children, min_size=1, max_size=3)
        | st.lists(children, min_size=1, max_size=3)
        | st.tuples(plain, children)
    )


planted = st.recursive(secret_form() | plain | st.integers(), nest, max_leaves=8)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=planted, budget=st.integers(min_value=64, max_value=4096))
def test_property_a_planted_secret_never_survives(value: Any, budget: int) -> None:
    text = dumps(value, Config(max_attribute_bytes=budget))
    assert len(text.encode("utf-8")) <= budget
    json.loads(text)
    assert "SK9" not in text


@settings(max_examples=100, deadline=None)
@given(value=st.recursive(st.integers() | plain, nest, max_leaves=8), keep=st.integers(1, 10**6))
def test_property_non_secret_keys_are_kept(value: Any, keep: int) -> None:
    wrapped = {"max_tokens": keep, "data": value, "url": f"https://h/?max_tokens={keep}"}
    assert json.loads(dumps(wrapped, CONFIG)) == json.loads(json.dumps(wrapped))
