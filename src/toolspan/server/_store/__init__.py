"""The store: spans, event log and trace summaries in SQLite, and remote reads."""
