"""Traces this replica does not hold, read from Tempo (``/api/v2/traces/{id}``) or Jaeger
(``/api/v3/traces/{id}``) and parsed by the bridge readers like any file of theirs."""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Final

from toolspan.bridge.model import Span
from toolspan.bridge.readers import BridgeReadError, read_spans

__all__ = ["RemoteError", "fetch_remote"]

_TIMEOUT_S: Final = 10.0
_MAX_BYTES: Final = 256 << 20


class RemoteError(Exception):
    """A backend answered with an error or something the bridge cannot read."""


def _get(url: str) -> bytes | None:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
            body: bytes = response.read(_MAX_BYTES + 1)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise RemoteError(f"{url}: HTTP {e.code}") from None
    except (urllib.error.URLError, OSError) as e:
        raise RemoteError(f"{url}: {e}") from None
    if len(body) > _MAX_BYTES:
        raise RemoteError(f"{url}: response over {_MAX_BYTES} bytes")
    return body


def fetch_remote(trace_id: str, tempo_url: str | None, jaeger_url: str | None) -> list[Span] | None:
    """The spans of ``trace_id`` from the first backend that has it (Tempo first), or ``None``."""
    urls = []
    if tempo_url:
        urls.append(f"{tempo_url.rstrip('/')}/api/v2/traces/{trace_id}")
    if jaeger_url:
        urls.append(f"{jaeger_url.rstrip('/')}/api/v3/traces/{trace_id}")
    for url in urls:
        body = _get(url)
        if body is None:
            continue
        try:
            spans, _ = read_spans(body, lenient=True)
        except BridgeReadError as e:
            raise RemoteError(f"{url}: {e}") from None
        if spans:
            return spans
    return None
