"""Streams: server-sent events of a trace, a conversation or every trace, resumable."""
