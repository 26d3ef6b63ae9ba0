"""The leaf kernel every layer may import: toolspan's ids and its environment variables."""
