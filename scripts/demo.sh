#!/usr/bin/env bash
# Set everything up and run the offline demo agent: prints its act/observe timeline and writes its
# trace files (OTLP JSON Lines, events, timeline, tree) to demo-output/.
#
#   bash scripts/demo.sh [--out DIR]
#   bash scripts/demo.sh --serve [--out DIR]   # also start `toolspan serve` on 127.0.0.1, send the demo's
#                                              # spans to it over OTLP, print the URLs, serve until Ctrl-C
# With --serve, PORT (default 4318) and GRPC_PORT (default 4317) choose the server's ports.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
SERVE=0
ARGS=()
for arg in "$@"; do
  if [ "$arg" = "--serve" ]; then SERVE=1; else ARGS+=("$arg"); fi
done
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# The versions the test suite runs with (constraints/test.txt), so an upstream release never breaks it.
.venv/bin/python -m pip install -q -c constraints/test.txt --upgrade pip
if [ "$SERVE" = 0 ]; then
  .venv/bin/python -m pip install -q -c constraints/test.txt -e ".[threading]"
  exec .venv/bin/python examples/demo_agent.py "${ARGS[@]}"
fi

.venv/bin/python -m pip install -q -c constraints/test.txt -e ".[threading,server]"
PORT=${PORT:-4318}
GRPC_PORT=${GRPC_PORT:-4317}
BASE="http://127.0.0.1:$PORT"
mkdir -p demo-output
.venv/bin/toolspan serve --db demo-output/toolspan.db --port "$PORT" --grpc-port "$GRPC_PORT" &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null' EXIT INT TERM
for _ in $(seq 1 100); do
  if .venv/bin/python -c "import urllib.request; urllib.request.urlopen('$BASE/healthz', timeout=1)" 2>/dev/null; then
    break
  fi
  sleep 0.1
done
OTEL_EXPORTER_OTLP_ENDPOINT="$BASE" OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf TOOLSPAN_PENDING_SPANS=true \
  .venv/bin/python examples/demo_agent.py "${ARGS[@]}"
.venv/bin/python - "$BASE" <<'PY'
import json
import sys
import urllib.request

base = sys.argv[1]
rows = json.load(urllib.request.urlopen(f"{base}/api/traces"))["traces"]
print(f"\ntoolspan serve is running: {base}")
print(f"  traces          {base}/api/traces")
print(f"  live stream     {base}/api/stream            (SSE; curl -N)")
for row in rows:
    trace = row["trace_id"]
    print(f"  trace {trace}  {row['root_name']} ({row['state']}, {row['tool_calls']} tool calls)")
    for view in ("events", "tree", "plans", "progress", "stream"):
        print(f"    {view:<9} {base}/api/traces/{trace}/{view}")
    if row["conversation_id"]:
        print(f"    timeline  {base}/api/conversations/{row['conversation_id']}/timeline")
print(f"  OpenAPI         {base}/openapi.json")
print("Ctrl-C to stop.")
PY
wait "$SERVER"
