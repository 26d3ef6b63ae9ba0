"""Change-watching: how the replicas sharing a store tell each other what changed (``ChangeFeed``).

- A store of one process (``LocalChanges``, SQLite): nothing to watch and nothing to send; the process that
  commits wakes its own streams and long polls, and relays its own text deltas.
- PostgreSQL (``PostgresChanges``): every write ``NOTIFY``s channel ``toolspan_commits`` at commit, naming the
  traces it wrote (``commit_payload``; nothing when they do not fit: then every stream wakes); each replica
  ``LISTEN``s on a connection of its own (``watch``) and wakes its streams, which read the log from their
  cursors (a notification lost while the connection was down is made up for by a wake-up on reconnect). Text
  deltas, never stored, go to every replica on channel ``toolspan_deltas`` (``publish_deltas``); one longer
  than a notification's payload limit is sent in consecutive pieces. A decision or cancel request stored by
  any replica is told on ``toolspan_control`` (``publish_control``), so every replica's long polls read it.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, Protocol

from toolspan.bridge.internal import LogRecord
from toolspan.server._store.sql.engines import LISTEN

__all__ = [
    "COMMITS",
    "ChangeFeed",
    "CONTROL",
    "DELTAS",
    "LocalChanges",
    "PostgresChanges",
    "commit_payload",
    "commit_scope",
    "delta_payloads",
]

_logger = logging.getLogger(__name__)

COMMITS: Final = "toolspan_commits"
DELTAS: Final = "toolspan_deltas"
CONTROL: Final = "toolspan_control"
PAYLOAD_BYTES: Final = 7000  # PostgreSQL's limit is 8000 bytes per notification

# Sends payloads on a channel: ``pg_notify(channel, payload)`` for each, on a connection of the store's.
Notify = Callable[[str, Sequence[str]], None]


class ChangeFeed(Protocol):
    """What a store tells the replicas sharing it, and hears from them (nothing on a store of one process)."""

    def watch(
        self,
        on_commit: Callable[..., None],
        on_deltas: Callable[[list[LogRecord]], None],
        on_control: Callable[[], None] | None = None,
    ) -> None:
        """Call ``on_commit(traces or None, conversations)`` after another replica's commit, ``on_deltas``
        with the text deltas it relayed, ``on_control`` after it stored a decision or a cancel request."""

    def publish_deltas(self, records: Sequence[LogRecord]) -> None:
        """Send text deltas to the other replicas (this one relayed them itself)."""

    def publish_control(self) -> None:
        """Tell the other replicas a decision or cancel request was stored."""

    def close(self) -> None: ...


class LocalChanges:
    """The change feed of a store written by one process: nothing to watch, nothing to publish."""

    def watch(
        self,
        on_commit: Callable[..., None],
        on_deltas: Callable[[list[LogRecord]], None],
        on_control: Callable[[], None] | None = None,
    ) -> None:
        """Nothing to watch: one process writes this store, and wakes its own streams."""

    def publish_deltas(self, records: Sequence[LogRecord]) -> None:
        """Nothing to publish: the text deltas this process relays reach every client of the store."""

    def publish_control(self) -> None:
        """Nothing to publish: the process that stored a decision wakes its own long polls."""

    def close(self) -> None:
        """Nothing to stop."""


def delta_payloads(origin: str, records: Sequence[LogRecord]) -> list[str]:
    """Notification payloads carrying ``records`` (each under the payload limit): records whose text
    is longer than a payload are cut into consecutive pieces (a client joins deltas in order)."""
    out: list[str] = []
    group: list[list[Any]] = []
    size = 0

    def flush() -> None:
        nonlocal group, size
        if group:
            out.append(json.dumps({"origin": origin, "records": group}, ensure_ascii=False))
        group, size = [], 0

    for record in records:
        body = record.body if isinstance(record.body, str) else json.dumps(record.body, ensure_ascii=False)
        head = [record.trace_id, record.span_id, record.time_ns, record.event_name, dict(record.attributes)]
        room = PAYLOAD_BYTES - len(json.dumps(head, ensure_ascii=False).encode()) - 200
        pieces = [body]
        if len(body.encode()) > room:
            step = max(1, room // 6)  # at most 6 bytes per character once escaped in JSON
            pieces = [body[i : i + step] for i in range(0, len(body), step)] or [""]
        for piece in pieces:
            item = [*head, piece]
            length = len(json.dumps(item, ensure_ascii=False).encode())
            if size + length > PAYLOAD_BYTES:
                flush()
            group.append(item)
            size += length + 1
    flush()
    return out


def commit_payload(traces: Iterable[str], conversations: Iterable[str]) -> str:
    """The payload of a commit notification: the traces (and conversations) it wrote, so each replica wakes
    only the streams they concern; empty (every stream wakes) when they do not fit a notification."""
    text = json.dumps({"t": sorted(traces), "c": sorted(conversations)}, ensure_ascii=False)
    return text if len(text.encode("utf-8", "surrogatepass")) <= PAYLOAD_BYTES else ""


def commit_scope(payload: str) -> tuple[list[str] | None, list[str]]:
    """``(traces, conversations)`` of a commit notification (``None``: it says not which: all of them)."""
    try:
        doc = json.loads(payload) if payload else None
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("t"), list):
        return None, []
    conversations = doc.get("c")
    return [str(t) for t in doc["t"]], [str(c) for c in conversations] if isinstance(
        conversations, list
    ) else []


def _records(payload: str, own: str) -> list[LogRecord]:
    """The delta records of a notification, unless this process sent it (it relayed them already)."""
    message = json.loads(payload)
    if message.get("origin") == own:
        return []
    return [LogRecord(r[0], r[1], r[2], r[3], r[4], r[5]) for r in message.get("records", [])]


def _wake(on_commit: Callable[..., None], *args: Any) -> None:
    try:
        on_commit(*args)
    except Exception:  # (the server shutting down): the listener goes on until it is stopped
        _logger.debug("toolspan serve: could not wake the streams", exc_info=True)


class PostgresChanges:
    """The change feed of a PostgreSQL store shared by replicas (see the module's documentation):
    ``LISTEN`` on a connection of its own (``url``, with ``psycopg``), ``NOTIFY`` through ``notify``."""

    def __init__(self, url: str, psycopg: Any, notify: Notify) -> None:
        self._url = url
        self._psycopg = psycopg
        self._notify = notify
        self._origin = uuid.uuid4().hex
        self._stop = threading.Event()
        self._listener: threading.Thread | None = None

    def watch(
        self,
        on_commit: Callable[..., None],
        on_deltas: Callable[[list[LogRecord]], None],
        on_control: Callable[[], None] | None = None,
    ) -> None:
        """Call ``on_commit`` after every commit of any replica, ``on_deltas`` with the text deltas other
        replicas relayed, and ``on_control`` after a decision or cancel request stored by any replica
        (``publish_control``), from a thread of its own (``LISTEN`` on a connection of its own)."""
        self._listener = threading.Thread(
            target=self._listen,
            args=(on_commit, on_deltas, on_control or (lambda: None)),
            name="toolspan-listen",
            daemon=True,
        )
        self._listener.start()

    def publish_deltas(self, records: Sequence[LogRecord]) -> None:
        payloads = delta_payloads(self._origin, records)
        if payloads:
            self._notify(DELTAS, payloads)

    def publish_control(self) -> None:
        self._notify(CONTROL, [""])

    def close(self) -> None:
        """Stop listening (a second call does nothing)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._listener is not None:
            self._listener.join(5)

    def _listen(
        self,
        on_commit: Callable[..., None],
        on_deltas: Callable[[list[LogRecord]], None],
        on_control: Callable[[], None],
    ) -> None:
        backoff = 0.1
        while not self._stop.is_set():
            try:
                with self._psycopg.connect(self._url, autocommit=True, connect_timeout=5) as conn:
                    for channel in (COMMITS, DELTAS, CONTROL):
                        conn.execute(LISTEN.format(channel=channel))
                    backoff = 0.1
                    # Anything committed or decided while this connection was down is read now.
                    _wake(on_commit)
                    _wake(on_control)
                    while not self._stop.is_set():
                        # Each notification as it arrives (the timeout only looks at ``_stop`` again).
                        for note in conn.notifies(timeout=0.5):
                            if note.channel == DELTAS:
                                self._deliver(note.payload, on_deltas)
                            elif note.channel == CONTROL:
                                _wake(on_control)
                            else:
                                _wake(on_commit, *commit_scope(note.payload))
                            if self._stop.is_set():
                                break
            except self._psycopg.Error as e:
                if self._stop.is_set():
                    return
                _logger.warning("toolspan serve: lost the notification connection (%s); reconnecting", e)
                self._stop.wait(backoff)
                backoff = min(2.0, backoff * 2)

    def _deliver(self, payload: str, on_deltas: Callable[[list[LogRecord]], None]) -> None:
        try:
            records = _records(payload, self._origin)
        except (ValueError, TypeError, IndexError, AttributeError):
            _logger.warning("toolspan serve: ignored a text delta notification that is not toolspan's")
            return
        if records:
            try:
                on_deltas(records)
            except Exception:  # a relay failure must not end the listener
                _logger.exception("toolspan serve: relaying text deltas failed")
