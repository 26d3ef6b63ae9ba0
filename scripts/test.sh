#!/usr/bin/env bash
# Set everything up and run the whole test suite: lint, format check, strict type check, tests
# (the end-to-end tests install and start the real rotel collector and Phoenix backend themselves).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q -c constraints/test.txt --upgrade pip
# Exact versions from constraints/test.txt: an upstream release never changes what CI runs.
.venv/bin/python -m pip install -q -c constraints/test.txt -e ".[test,threading]"
# The trace page tests drive Debian's chromium through Playwright (never `playwright install`).
command -v chromium >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }
.venv/bin/ruff check src tests benchmarks examples
.venv/bin/ruff format --check src tests benchmarks examples
.venv/bin/mypy
.venv/bin/python -m pytest -q "$@"
