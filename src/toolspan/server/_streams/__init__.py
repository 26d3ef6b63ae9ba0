"""Streams: server-sent events of a trace, a conversation or every trace, resumable: act/observe events from
the store's event log (``events``, ``trace``), the progress and frontend views (``progress``, ``frontend``),
text deltas relayed and never stored (``deltas``), the wake-ups (``wakeups``) and the framing (``sse``)."""
