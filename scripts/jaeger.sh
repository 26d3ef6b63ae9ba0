#!/usr/bin/env bash
# Jaeger with its UI behind the OpenTelemetry Collector, on this machine, in one command:
#
#   bash scripts/jaeger.sh
#
# builds what it needs once (scripts/e2e-deps.sh: the Collector and Jaeger from their Go modules, minutes on a
# machine with no Go build cache; Jaeger's UI with npm, about 3 minutes; a line of progress every 30 s), then
# starts Jaeger v2 (backend-config/jaeger.yaml, memory storage, its UI) and the Collector in front of it
# (collector-config/jaeger.yaml), every port on 127.0.0.1, prints where everything is, and stops both on Ctrl-C.
# Applications send OTLP to the Collector on OTLP's default ports, so an exporter left at its defaults reaches it.
#
# Ports (each moved by the variable named; all on 127.0.0.1):
#   OTLP_GRPC_PORT 4317, OTLP_HTTP_PORT 4318      the Collector's OTLP receiver (what applications send to)
#   COLLECTOR_METRICS_PORT 8888                   the Collector's own metrics (Prometheus, /metrics)
#   JAEGER_QUERY_HTTP_PORT 16686                  Jaeger's UI and query API (v1 /api/traces, v3 /api/v3/traces)
#   JAEGER_QUERY_GRPC_PORT 16685                  Jaeger's query API over gRPC
#   JAEGER_OTLP_GRPC_PORT 14317, JAEGER_OTLP_HTTP_PORT 14318   Jaeger's own OTLP receiver (the Collector
#                                                 exports to the first; an application may skip the Collector)
set -euo pipefail
cd "$(dirname "$0")/.."
HOST=127.0.0.1
export OTLP_GRPC_PORT=${OTLP_GRPC_PORT:-4317} OTLP_HTTP_PORT=${OTLP_HTTP_PORT:-4318}
export COLLECTOR_METRICS_PORT=${COLLECTOR_METRICS_PORT:-8888}
export JAEGER_HOST=$HOST JAEGER_QUERY_HTTP_PORT=${JAEGER_QUERY_HTTP_PORT:-16686}
export JAEGER_QUERY_GRPC_PORT=${JAEGER_QUERY_GRPC_PORT:-16685}
export JAEGER_OTLP_GRPC_PORT=${JAEGER_OTLP_GRPC_PORT:-14317} JAEGER_OTLP_HTTP_PORT=${JAEGER_OTLP_HTTP_PORT:-14318}
export JAEGER_UI_ASSETS=$PWD/.e2e/jaeger-ui JAEGER_ENDPOINT=$HOST:$JAEGER_OTLP_GRPC_PORT

bash scripts/e2e-deps.sh go
bash scripts/e2e-deps.sh ui

taken=()
for port in "$OTLP_GRPC_PORT" "$OTLP_HTTP_PORT" "$COLLECTOR_METRICS_PORT" "$JAEGER_QUERY_HTTP_PORT" \
  "$JAEGER_QUERY_GRPC_PORT" "$JAEGER_OTLP_GRPC_PORT" "$JAEGER_OTLP_HTTP_PORT"; do
  if (exec 3<>"/dev/tcp/$HOST/$port") 2>/dev/null; then taken+=("$port"); fi
done
if ((${#taken[@]})); then
  echo "jaeger.sh: port ${taken[*]} of $HOST is in use (another Collector, Jaeger or toolspan serve?); stop it" \
    "or move the port with the variables at the top of scripts/jaeger.sh" >&2
  exit 1
fi

LOGS=$(mktemp -d "${TMPDIR:-/tmp}/toolspan-jaeger.XXXXXX")
# Each in a session of its own, so Ctrl-C reaches this script alone, which stops both (and says so).
setsid .e2e/bin/jaeger --config backend-config/jaeger.yaml >"$LOGS/jaeger.log" 2>&1 &
JAEGER=$!
# The Collector's own metrics on 127.0.0.1 (its default reader, moved off every interface).
setsid .e2e/bin/otelcol --config collector-config/jaeger.yaml \
  --set="receivers.otlp.protocols.grpc.endpoint=$HOST:$OTLP_GRPC_PORT" \
  --set="receivers.otlp.protocols.http.endpoint=$HOST:$OTLP_HTTP_PORT" \
  --config="yaml:service::telemetry::metrics::readers: [{pull: {exporter: {prometheus: {host: '$HOST', port: $COLLECTOR_METRICS_PORT}}}}]" \
  >"$LOGS/otelcol.log" 2>&1 &
COLLECTOR=$!

stop() {
  kill -TERM "$JAEGER" "$COLLECTOR" 2>/dev/null || true
  wait "$JAEGER" "$COLLECTOR" 2>/dev/null || true
}
trap 'stop; echo "jaeger.sh: stopped (logs in $LOGS)"; exit 0' INT TERM

ready() {  # every port answers, and neither program has stopped
  local port
  for port in "$OTLP_GRPC_PORT" "$OTLP_HTTP_PORT" "$JAEGER_QUERY_HTTP_PORT" "$JAEGER_OTLP_GRPC_PORT"; do
    (exec 3<>"/dev/tcp/$HOST/$port") 2>/dev/null || return 1
  done
}
for ((i = 0; i < 300; i++)); do
  if ! kill -0 "$JAEGER" 2>/dev/null || ! kill -0 "$COLLECTOR" 2>/dev/null; then
    stop
    echo "jaeger.sh: Jaeger or the Collector stopped while starting; their logs:" >&2
    tail -n 20 "$LOGS/jaeger.log" "$LOGS/otelcol.log" >&2
    exit 1
  fi
  ready && break
  sleep 0.1
done
if ! ready; then
  stop
  echo "jaeger.sh: not ready after 30 s; logs in $LOGS" >&2
  exit 1
fi

cat <<EOF
Jaeger UI          http://$HOST:$JAEGER_QUERY_HTTP_PORT/ (search: service, operation "execute_tool <name>", tags)
send OTLP to       the Collector: OTLP/gRPC $HOST:$OTLP_GRPC_PORT, OTLP/HTTP http://$HOST:$OTLP_HTTP_PORT
                   (an application at the SDK's default endpoint needs no setting)
Jaeger query API   http://$HOST:$JAEGER_QUERY_HTTP_PORT/api/traces (v1), /api/v3/traces (v3); gRPC $HOST:$JAEGER_QUERY_GRPC_PORT
Jaeger's OTLP      gRPC $HOST:$JAEGER_OTLP_GRPC_PORT, HTTP http://$HOST:$JAEGER_OTLP_HTTP_PORT (the Collector exports here)
Collector metrics  http://$HOST:$COLLECTOR_METRICS_PORT/metrics
read back          toolspan find --jaeger http://$HOST:$JAEGER_QUERY_HTTP_PORT --service SERVICE
logs               $LOGS
Ctrl-C stops both.
EOF

# Until Ctrl-C, or until one of them stops on its own (then the other too, and the log says why).
status=0
wait -n "$JAEGER" "$COLLECTOR" || status=$?
stop
echo "jaeger.sh: Jaeger or the Collector stopped (status $status); their logs:" >&2
tail -n 20 "$LOGS/jaeger.log" "$LOGS/otelcol.log" >&2
exit 1
