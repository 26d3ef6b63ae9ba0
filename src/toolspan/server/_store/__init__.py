"""The store: one storage for SQLite and PostgreSQL (``storage``), its statements written once (``sql``) in
two dialects (``dialect``) and one versioned schema (``schema``); each engine's own part (``sqlite``,
``postgres``), its change feed (``changes``) and the control channel's rows (``control``); the trace list's
query, retention, and reads from Tempo or Jaeger (``remote``)."""
