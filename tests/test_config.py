"""Config resolution: argument > environment > default, validation, and the cheap global read."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from toolspan import config
from toolspan._util import env as _env
from toolspan.config import (
    DEFAULT_MAX_ATTRIBUTE_BYTES,
    DEFAULT_REDACT_KEYS,
    Config,
    get_config,
    normalize_key,
    resolve_config,
    set_config,
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in _env.ALL:
        monkeypatch.delenv(var.name, raising=False)
    saved = config._current
    yield
    set_config(saved)


def test_defaults() -> None:
    assert resolve_config() == Config(
        True, DEFAULT_MAX_ATTRIBUTE_BYTES, DEFAULT_REDACT_KEYS, None, "genai,openinference"
    )
    assert DEFAULT_MAX_ATTRIBUTE_BYTES == 16384
    assert {
        "apikey",
        "token",
        "password",
        "authorization",
        "secret",
        "cookie",
        "credential",
    } <= DEFAULT_REDACT_KEYS


@pytest.mark.parametrize(
    ("env", "argument", "expected"),
    [
        ({"TOOLSPAN_CAPTURE_CONTENT": "false"}, None, False),
        ({"TOOLSPAN_CAPTURE_CONTENT": "0"}, None, False),
        ({"TOOLSPAN_CAPTURE_CONTENT": "TRUE"}, None, True),
        ({"TOOLSPAN_CAPTURE_CONTENT": "false"}, True, True),
        ({"TOOLSPAN_CAPTURE_CONTENT": "true"}, False, False),
        ({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "false"}, None, False),
        ({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "NO_CONTENT"}, None, False),
        ({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}, None, True),
        ({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}, None, True),
        (
            {
                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "no_content",
                "TOOLSPAN_CAPTURE_CONTENT": "true",
            },
            None,
            True,
        ),
        ({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "false"}, True, True),
    ],
)
def test_capture_content_resolution(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], argument: bool | None, expected: bool
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert resolve_config(capture_content=argument).capture_content is expected


def test_max_attribute_bytes_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSPAN_MAX_ATTRIBUTE_BYTES", "2048")
    assert resolve_config().max_attribute_bytes == 2048
    assert resolve_config(max_attribute_bytes=100).max_attribute_bytes == 100


@pytest.mark.parametrize(
    ("name", "value", "field", "default"),
    [
        ("TOOLSPAN_CAPTURE_CONTENT", "maybe", "capture_content", True),
        ("TOOLSPAN_MAX_ATTRIBUTE_BYTES", "lots", "max_attribute_bytes", DEFAULT_MAX_ATTRIBUTE_BYTES),
        ("TOOLSPAN_MAX_ATTRIBUTE_BYTES", "10", "max_attribute_bytes", DEFAULT_MAX_ATTRIBUTE_BYTES),
    ],
)
def test_bad_env_values_logged_and_ignored(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    name: str,
    value: str,
    field: str,
    default: Any,
) -> None:
    monkeypatch.setenv(name, value)
    with caplog.at_level(logging.WARNING, logger="toolspan._util.env"):
        resolved = resolve_config()
    assert getattr(resolved, field) == default
    assert f"ignoring {name}={value!r}" in caplog.text


def test_redact_keys_add_up_and_are_normalised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSPAN_REDACT_KEYS", "SSN, X-Internal-Id,")
    resolved = resolve_config(redact_keys=["card_number"])
    assert resolved.redact_keys == DEFAULT_REDACT_KEYS | {"ssn", "xinternalid", "cardnumber"}


def test_normalize_key() -> None:
    assert normalize_key("X-Api-Key") == "xapikey"
    assert normalize_key("OPENAI_API_KEY") == "openaiapikey"
    assert normalize_key("apiKey") == "apikey"
    assert normalize_key("Straße") == "strasse"


def test_redact_callback_kept() -> None:
    def redact(path: str, value: Any) -> Any:
        return value

    assert resolve_config(redact=redact).redact is redact


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"capture_content": "yes"}, TypeError, "capture_content must be a bool"),
        ({"max_attribute_bytes": 63}, ValueError, "max_attribute_bytes must be >= 64"),
        ({"max_attribute_bytes": 1.5}, TypeError, "max_attribute_bytes must be an int"),
        ({"max_attribute_bytes": True}, TypeError, "max_attribute_bytes must be an int"),
        ({"redact_keys": "ssn"}, TypeError, "not a single str"),
        ({"redact_keys": [1]}, TypeError, "must contain str key names"),
        ({"redact_keys": ["-"]}, ValueError, "empty key name"),
        ({"redact": 5}, TypeError, "redact must be a callable"),
        ({"conventions": "otel"}, ValueError, "conventions: unknown name 'otel'"),
        ({"conventions": ""}, ValueError, "unknown name ''"),
        ({"conventions": []}, ValueError, "at least one"),
        ({"conventions": 3}, TypeError, "conventions must be a str or a collection of str, got int"),
        ({"conventions": b"genai"}, TypeError, "got bytes"),
        ({"conventions": ["genai", 1]}, TypeError, "must contain str names, got int: 1"),
    ],
)
def test_bad_arguments_raise(arguments: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        resolve_config(**arguments)


def test_config_validates_and_normalises_when_built_directly() -> None:
    assert Config(redact_keys=frozenset({"My-Key"})).redact_keys == frozenset({"mykey"})
    with pytest.raises(ValueError, match=">= 64"):
        Config(max_attribute_bytes=0)


def test_config_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Config().capture_content = False  # type: ignore[misc]


def test_get_config_resolves_once_then_reads_the_global(monkeypatch: pytest.MonkeyPatch) -> None:
    set_config(None)
    monkeypatch.setenv("TOOLSPAN_CAPTURE_CONTENT", "false")
    first = get_config()
    assert first.capture_content is False
    monkeypatch.setenv("TOOLSPAN_CAPTURE_CONTENT", "true")
    assert get_config() is first  # no environment parsing per call
    set_config(None)
    assert get_config().capture_content is True


def test_set_config() -> None:
    mine = Config(capture_content=False)
    set_config(mine)
    assert get_config() is mine
    with pytest.raises(TypeError):
        set_config({"capture_content": False})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("env", "argument", "expected"),
    [
        (None, None, "genai,openinference"),
        ("genai", None, "genai"),
        (" OpenInference ", None, "openinference"),
        ("openinference,genai", None, "genai,openinference"),
        ("genai,genai", None, "genai"),
        ("genai", "openinference", "openinference"),
        ("openinference", ["GenAI", "openinference"], "genai,openinference"),
        (None, frozenset({"genai"}), "genai"),
        (None, "genai, openinference", "genai,openinference"),
    ],
)
def test_conventions_resolution(
    monkeypatch: pytest.MonkeyPatch, env: str | None, argument: Any, expected: str
) -> None:
    if env is not None:
        monkeypatch.setenv("TOOLSPAN_CONVENTIONS", env)
    assert resolve_config(conventions=argument).conventions == expected


@pytest.mark.parametrize("value", ["phoenix", "genai,", ","])
def test_bad_conventions_env_logged_and_ignored(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, value: str
) -> None:
    monkeypatch.setenv("TOOLSPAN_CONVENTIONS", value)
    with caplog.at_level(logging.WARNING, logger="toolspan.config"):
        assert resolve_config().conventions == "genai,openinference"
    assert f"ignoring TOOLSPAN_CONVENTIONS={value!r}" in caplog.text


def test_conventions_canonical_when_built_directly() -> None:
    assert Config(conventions="openinference, GENAI").conventions == "genai,openinference"
    with pytest.raises(ValueError, match="unknown name 'both'"):
        Config(conventions="both")
