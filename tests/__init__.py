"""toolspan's tests, a folder per package of ``src/toolspan`` (see docs/development.md)."""
