#!/usr/bin/env bash
# Set everything up and run the offline demo agent: prints its act/observe timeline and writes its
# trace files (OTLP JSON Lines, events, timeline, tree) to demo-output/.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# The versions the test suite runs with (constraints/test.txt), so an upstream release never breaks it.
.venv/bin/python -m pip install -q -c constraints/test.txt --upgrade pip
.venv/bin/python -m pip install -q -c constraints/test.txt -e ".[threading]"
.venv/bin/python examples/demo_agent.py "$@"
