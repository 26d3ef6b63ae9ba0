#!/usr/bin/env bash
# Set everything up and run the offline demo agent: prints its act/observe timeline and writes its
# trace files (OTLP JSON Lines, events, timeline, tree, plans, the trace page) to demo-output/.
#
#   bash scripts/demo.sh [--out DIR]
#   bash scripts/demo.sh --serve [--out DIR]   # also start `toolspan serve` on 127.0.0.1, send the demo's
#                                              # spans to it over OTLP, print the URLs (the trace list:
#                                              # /traces), serve until Ctrl-C
# With --serve, PORT (default 4318) and GRPC_PORT (default 4317; -1: no gRPC) choose the server's ports.
#
# The first run creates .venv and installs toolspan from this checkout with the versions the tests pin
# (constraints/test.txt). Later runs install nothing (so they work offline) until pyproject.toml or the
# constraints change; FORCE_INSTALL=1 installs again.
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

# What is installed is recorded in a stamp inside .venv: the extras and a digest of the files that
# decide the install. The same stamp means the same install: nothing to do.
EXTRAS=threading
if [ "$SERVE" = 1 ]; then EXTRAS=threading,server; fi
STAMP=.venv/.toolspan-demo-installed
WANT="$EXTRAS $(cat pyproject.toml constraints/test.txt | cksum)"
installed() {
  # a stamp for these extras, or one for a superset (the server extras include the plain demo's)
  [ -f "$STAMP" ] || return 1
  local have
  have=$(cat "$STAMP")
  [ "$have" = "$WANT" ] || { [ "$EXTRAS" = threading ] && [ "$have" = "threading,server ${WANT#* }" ]; }
}
if [ "${FORCE_INSTALL:-0}" = 1 ] || ! installed; then
  echo "demo: installing toolspan[$EXTRAS] from this checkout into .venv (once)" >&2
  .venv/bin/python -m pip install -q -c constraints/test.txt --upgrade pip
  .venv/bin/python -m pip install -q -c constraints/test.txt -e ".[$EXTRAS]"
  printf '%s' "$WANT" > "$STAMP"
fi

if [ "$SERVE" = 0 ]; then
  exec .venv/bin/python examples/demo_agent.py "${ARGS[@]}"
fi

PORT=${PORT:-4318}
GRPC_PORT=${GRPC_PORT:-4317}
BASE="http://127.0.0.1:$PORT"
mkdir -p demo-output
.venv/bin/toolspan serve --db demo-output/toolspan.db --port "$PORT" --grpc-port "$GRPC_PORT" &
SERVER=$!
stop() {
  # Ctrl-C (or a TERM) ends the demo as it should: the server stopped cleanly, status 0.
  trap - EXIT INT TERM
  kill "$SERVER" 2>/dev/null || true
  wait "$SERVER" 2>/dev/null || true
  exit 0
}
trap 'kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null' EXIT
trap stop INT TERM
up=0
for _ in $(seq 1 100); do
  if ! kill -0 "$SERVER" 2>/dev/null; then
    status=0
    wait "$SERVER" || status=$?
    echo "demo: toolspan serve exited (status $status) before it answered; its error is above." \
      "A busy port? Try PORT=... GRPC_PORT=... bash scripts/demo.sh --serve" >&2
    trap - EXIT INT TERM
    exit 1
  fi
  if .venv/bin/python -c "import urllib.request; urllib.request.urlopen('$BASE/healthz', timeout=1)" 2>/dev/null; then
    up=1
    break
  fi
  sleep 0.1
done
if [ "$up" = 0 ]; then
  echo "demo: toolspan serve did not answer on $BASE/healthz within 10 s" >&2
  exit 1
fi
SINCE_MS=$(.venv/bin/python -c "import time; print(time.time_ns() // 1_000_000)")
OTEL_EXPORTER_OTLP_ENDPOINT="$BASE" OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf TOOLSPAN_PENDING_SPANS=all \
  .venv/bin/python examples/demo_agent.py "${ARGS[@]}"
if ! kill -0 "$SERVER" 2>/dev/null; then
  echo "demo: toolspan serve stopped while the demo ran; its error is above" >&2
  exit 1
fi
.venv/bin/python - "$BASE" "$SINCE_MS" <<'PY'
import json
import sys
import urllib.request

base, since = sys.argv[1], sys.argv[2]
# This run's traces only (the store keeps earlier runs of the demo too: they are in the list).
rows = json.load(urllib.request.urlopen(f"{base}/api/traces?from_ms={since}"))["traces"]
print(f"\ntoolspan serve is running: {base}")
print(f"  runs    {base}/traces   (open it in a browser: every run, each with its live trace page)")
print(f"  inbox   {base}/inbox    (tool calls waiting for a decision)")
print("This demo's runs:")
for row in reversed(rows):  # in the order they ran
    print(f"  {row['name']}")
    print(f"    {row['state']}, {row['tool_calls']} tool calls   page {base}/traces/{row['trace_id']}")
print(f"API: {base}/api/traces, {base}/api/traces/<id>/events (or tree, plans, progress, stream),")
print(f"     live stream {base}/api/stream (SSE), OpenAPI {base}/openapi.json")
print("Ctrl-C to stop.", flush=True)
PY
wait "$SERVER" || true
