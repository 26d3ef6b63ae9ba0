"""The leaf kernel every layer may import: toolspan's ids, its environment variables, and the private
details of OpenTelemetry and CPython it relies on for speed (each checked, with a public fallback)."""
