#!/usr/bin/env bash
# Set everything up and run the offline demo agent: prints its act/observe timeline and writes its
# trace files (OTLP JSON Lines, events, timeline, tree) to demo-output/.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[threading]"
.venv/bin/python examples/demo_agent.py "$@"
