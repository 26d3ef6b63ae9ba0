"""What one engine runs alone: SQLite's settings, checks, transactions and checkpoints (``sqlite``);
PostgreSQL's commit clock row, advisory locks and notifications (``postgres``, ``changes``)."""

from __future__ import annotations

from typing import Final

__all__ = [
    "BEGIN",
    "CLOCK",
    "CLOCK_ROW",
    "CLOCK_TICK",
    "COMMIT",
    "INTEGRITY",
    "LISTEN",
    "LOCK",
    "LOCK_TRACES",
    "MAX_EVENT_NS",
    "NOTIFY",
    "NOTIFY_RAW",
    "PRAGMAS",
    "PRUNED_AT",
    "ROLLBACK",
    "TICK",
    "TRY_LOCK",
    "WAL_CHECKPOINT",
    "WAL_TRUNCATE",
]

# --- SQLite --------------------------------------------------------------------------------------------

# The connection's settings: WAL, a commit appends to it (``synchronous=NORMAL``), waits for the lock, a
# 32 MiB cache, and no checkpoint by a commit: they run in the background on their own connection (the
# only fsyncs in WAL mode with synchronous=NORMAL), so a commit is still durable when the process is killed.
PRAGMAS: Final = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA busy_timeout=5000",
    "PRAGMA cache_size=-32768",
    "PRAGMA wal_autocheckpoint=0",
)
# The file's check when it opens: up to 3 problems (``ok`` when none).
INTEGRITY: Final = "PRAGMA quick_check(3)"
# The newest event's commit clock, and the clock stored with the data.
MAX_EVENT_NS: Final = "SELECT max(ns) FROM events"
CLOCK: Final = "SELECT value FROM meta WHERE key = 'clock'"
# A write transaction (taking the write lock at once), its end, its undoing.
BEGIN: Final = "BEGIN IMMEDIATE"
COMMIT: Final = "COMMIT"
ROLLBACK: Final = "ROLLBACK"
# A checkpoint of the WAL beside the writers, and the last one, emptying it (at close).
WAL_CHECKPOINT: Final = "PRAGMA wal_checkpoint(PASSIVE)"
WAL_TRUNCATE: Final = "PRAGMA wal_checkpoint(TRUNCATE)"

# --- PostgreSQL ----------------------------------------------------------------------------------------

# The commit clock's row, made once; its last visible tick.
CLOCK_ROW: Final = "INSERT INTO meta VALUES ('clock', '0') ON CONFLICT (key) DO NOTHING"
CLOCK_TICK: Final = "SELECT CAST(value AS BIGINT) FROM meta WHERE key = 'clock'"
# The next tick of the commit clock: the last statement of a transaction that writes events (``postgres``).
TICK: Final = (
    "UPDATE meta SET value = CAST(greatest(CAST(value AS BIGINT) + 1, ?) AS TEXT) WHERE key = 'clock'"
    " RETURNING CAST(value AS BIGINT)"
)
# The traces' advisory locks until the transaction ends, in key order, so two writers of the same traces
# never deadlock (the keys bound as one array, in PostgreSQL's own placeholder).
LOCK_TRACES: Final = "SELECT pg_advisory_xact_lock(k) FROM unnest(%b::bigint[]) AS k"
# An advisory lock until the transaction ends (the schema's migration), or nothing when another holds it
# (a retention sweep).
LOCK: Final = "SELECT pg_advisory_xact_lock(?)"
TRY_LOCK: Final = "SELECT pg_try_advisory_xact_lock(?)"
# When the cluster's last retention sweep ran.
PRUNED_AT: Final = "SELECT value FROM meta WHERE key = 'pruned_at'"
# A notification on a channel, sent at commit; the same in PostgreSQL's own placeholders (many at once).
NOTIFY: Final = "SELECT pg_notify(?, ?)"
NOTIFY_RAW: Final = "SELECT pg_notify(%s, %s)"
# Listen on a channel (its name filled in: ``changes``).
LISTEN: Final = "LISTEN {channel}"
