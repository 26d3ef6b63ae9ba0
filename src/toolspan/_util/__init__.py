"""The leaf every layer may import, as ``opentelemetry.util`` is opentelemetry-python's: toolspan's ids
(``ids``), its environment variables (``env``, the one table of them), the HTTP opener that never follows a
redirect (``http``), the loader of every package's names on first use (``lazy``), and the private details of
OpenTelemetry and CPython toolspan relies on for speed (``otel_internals``: each checked, with a public
fallback), the quicker ``__init__`` of the frozen records made per span (``records``), the decision words
(``words``). It imports nothing of toolspan but ``semconv`` and ``errors``."""
