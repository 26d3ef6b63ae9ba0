"""toolspan: every tool call of an AI agent as an OpenTelemetry span."""

__all__: list[str] = []
