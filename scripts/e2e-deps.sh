#!/usr/bin/env bash
# Install the real components the end-to-end tests start (tests/e2e/), each into its own venv under
# .e2e/ (git-ignored), so their dependencies never mix with the test venv:
#   .e2e/rotel-venv    rotel, an OTLP collector whose Rust binary (rotel/rotel-agent) ships in the wheel
#   .e2e/phoenix-venv  arize-phoenix, a trace backend with an OTLP receiver and a REST API
# builds the two Go programs, each from its own module (go.mod/go.sum pin every dependency):
#   .e2e/bin/otelcol   the OpenTelemetry Collector with the components of collector-config/ (tests/e2e/go/otelcol)
#   .e2e/bin/jaeger    Jaeger v2, the all-in-one (tests/e2e/go/jaeger: `go get -tool .../cmd/jaeger`)
# and builds Jaeger's UI from its source release (third_party/jaeger-ui, with Node.js and npm):
#   .e2e/jaeger-ui     the UI's static files, which Jaeger serves (backend-config/jaeger.yaml: JAEGER_UI_ASSETS)
# `e2e-deps.sh go` builds only the Go programs, `e2e-deps.sh ui` only the UI, `e2e-deps.sh python` installs
# only the venvs. On a machine with no Go build cache the Go programs take minutes (6 min 43 s measured for
# both on 2 cores), the UI about 3 (`npm ci` and the build; its node_modules is removed afterwards); a line of
# progress every 30 s says it is still working.
# Idempotent: a component whose venv already has the pinned version, or a program built from the same
# go.sum, is skipped (a quick check), so the test suite runs this before every e2e session; one run at a
# time per part (a lock under .e2e/): scripts/test.sh starts the Go builds in the background and a test session
# asking for them waits until they are done. constraints/{rotel,phoenix}.txt fix every dependency's
# version, so an upstream release never changes what CI runs. Override the pins with ROTEL_VERSION / PHOENIX_VERSION and the
# interpreter with PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
DIR=.e2e
ROTEL_VERSION=${ROTEL_VERSION:-0.0.1a15}
PHOENIX_VERSION=${PHOENIX_VERSION:-20.26.1}
WHAT=${1:-all}
case "$WHAT" in all | go | ui | python) ;; *)
  echo "usage: $0 [all|go|ui|python]" >&2
  exit 2
  ;;
esac
mkdir -p "$DIR"
# One run at a time per part (the Go programs, the UI, the venvs), so building one never waits for another.
lock() {  # lock PART
  exec 9>"$DIR/.lock-$1"
  flock 9
}

install() {  # install VENV PACKAGE==VERSION CONSTRAINTS MARKER-COMMAND...
  local venv=$1 spec=$2 constraints=$3
  shift 3
  local marker
  marker="$spec $(sha256sum "$constraints" | cut -c1-16)"
  if [ -x "$venv/bin/python" ] && [ -f "$venv/.installed" ] && [ "$(cat "$venv/.installed")" = "$marker" ]; then
    echo "e2e-deps: $spec already in $venv"
    return
  fi
  echo "e2e-deps: installing $spec into $venv"
  local start=$SECONDS
  rm -rf "$venv"
  "$PY" -m venv "$venv"
  "$venv/bin/python" -m pip install -q -c "$constraints" --upgrade pip
  # An exact pin also admits a pre-release (rotel); the constraints fix every dependency's version.
  "$venv/bin/python" -m pip install -q -c "$constraints" "$spec"
  "$@"
  echo "$marker" >"$venv/.installed"
  echo "e2e-deps: $spec installed in $((SECONDS - start)) s"
}

progress() {  # progress WHAT COMMAND...: run COMMAND, saying every 30 s that WHAT is still going on
  local what=$1 start=$SECONDS pid status
  shift
  "$@" &
  pid=$!
  while ! wait_for "$pid" 30; do
    echo "e2e-deps: still $what ($((SECONDS - start)) s)"
  done
  status=0
  wait "$pid" || status=$?
  return "$status"
}

wait_for() {  # wait_for PID SECONDS: true once PID has ended, false after SECONDS while it runs
  local i
  for ((i = 0; i < $2; i++)); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 1
  done
  ! kill -0 "$1" 2>/dev/null
}

build() {  # build NAME MODULE-DIR PACKAGE [LDFLAGS]: `go build` PACKAGE in MODULE-DIR into $DIR/bin/NAME
  local name=$1 module=$2 package=$3 ldflags="-s -w ${4:-}"
  local out="$DIR/bin/$name" marker files
  # Keyed by the Go version and the module's files: a changed pin or source rebuilds, nothing else does.
  files=$(find "$module" -maxdepth 1 -type f \( -name go.mod -o -name go.sum -o -name '*.go' \) | sort)
  # shellcheck disable=SC2086  # the module's own file names, without spaces
  marker="$(go env GOVERSION) $(cat $files | sha256sum | cut -c1-16) $ldflags"
  if [ -x "$out" ] && [ -f "$out.built" ] && [ "$(cat "$out.built")" = "$marker" ]; then
    echo "e2e-deps: $name already built in $out"
    return
  fi
  echo "e2e-deps: building $name ($package)"
  local start=$SECONDS
  mkdir -p "$DIR/bin"
  rm -f "$out.built"
  # -mod=readonly: go.sum is the pin (a missing sum fails the build, nothing is upgraded); -trimpath and
  # no symbols or VCS stamp: a smaller binary, and the same one from every checkout.
  progress "building $name" \
    bash -c 'cd "$1" && exec go build -mod=readonly -trimpath -buildvcs=false -ldflags="$2" -o "$3" "$4"' \
    _ "$module" "$ldflags" "$PWD/$out.tmp" "$package"
  mv "$out.tmp" "$out"
  echo "$marker" >"$out.built"
  echo "e2e-deps: $name built in $((SECONDS - start)) s"
}

if [ "$WHAT" = all ] || [ "$WHAT" = go ]; then
  lock go
  command -v go >/dev/null || {
    echo "e2e-deps: the Go toolchain (go) is needed to build the Collector and Jaeger" >&2
    exit 1
  }
  build otelcol tests/e2e/go/otelcol .
  # Jaeger v2.12.0 is the module's v1.75.0 tag; its release build stamps the version the same way.
  build jaeger tests/e2e/go/jaeger github.com/jaegertracing/jaeger/cmd/jaeger \
    "-X github.com/jaegertracing/jaeger/internal/version.latestVersion=v2.12.0"
fi

build_ui() {  # Jaeger UI v1.75.0 (the UI Jaeger v1.75.0 ships) from its source archive into $DIR/jaeger-ui
  local archive=third_party/jaeger-ui/jaeger-ui-v1.75.0.tar.gz out="$DIR/jaeger-ui" work="$DIR/jaeger-ui-build"
  local marker
  command -v npm >/dev/null || {
    echo "e2e-deps: Node.js and npm are needed to build the Jaeger UI" >&2
    exit 1
  }
  marker="$(sha256sum "$archive" | cut -c1-16) node $(node --version)"
  if [ -f "$out/index.html" ] && [ -f "$out.built" ] && [ "$(cat "$out.built")" = "$marker" ]; then
    echo "e2e-deps: jaeger-ui already built in $out"
    return
  fi
  echo "e2e-deps: building jaeger-ui from $archive (about 3 minutes)"
  local start=$SECONDS
  rm -rf "$work" "$out" "$out.built"
  mkdir -p "$work"
  tar xzf "$archive" -C "$work"
  # Its package.json asks for Node >= 24; Node 20 builds it. No install scripts: nothing but the registry.
  progress "installing jaeger-ui's packages" bash -c 'cd "$1" && exec npm ci --engine-strict=false \
    --ignore-scripts --no-audit --no-fund --loglevel=error >npm-ci.log 2>&1' _ "$work/jaeger-ui-v1.75.0" ||
    { tail -20 "$work/jaeger-ui-v1.75.0/npm-ci.log" >&2; exit 1; }
  progress "building jaeger-ui" bash -c 'cd "$1" && { npm run build --workspace packages/plexus &&
    npm run build --workspace packages/jaeger-ui; } >build.log 2>&1' _ "$work/jaeger-ui-v1.75.0" ||
    { tail -20 "$work/jaeger-ui-v1.75.0/build.log" >&2; exit 1; }
  mv "$work/jaeger-ui-v1.75.0/packages/jaeger-ui/build" "$out"
  rm -rf "$work"
  echo "$marker" >"$out.built"
  echo "e2e-deps: jaeger-ui built in $((SECONDS - start)) s"
}

if [ "$WHAT" = all ] || [ "$WHAT" = ui ]; then
  lock ui
  build_ui
fi
[ "$WHAT" = go ] || [ "$WHAT" = ui ] && exit 0
lock python

install "$DIR/rotel-venv" "rotel==$ROTEL_VERSION" constraints/rotel.txt \
  "$DIR/rotel-venv/bin/python" -c "import pathlib, subprocess, rotel; subprocess.run([str(pathlib.Path(rotel.__file__).parent / 'rotel-agent'), '--version'], check=True)"
install "$DIR/phoenix-venv" "arize-phoenix==$PHOENIX_VERSION" constraints/phoenix.txt "$DIR/phoenix-venv/bin/phoenix" --help
