#!/usr/bin/env bash
# Install the real components the end-to-end tests start (tests/e2e/), each into its own venv under
# .e2e/ (git-ignored), so their dependencies never mix with the test venv:
#   .e2e/rotel-venv    rotel, an OTLP collector whose Rust binary (rotel/rotel-agent) ships in the wheel
#   .e2e/phoenix-venv  arize-phoenix, a trace backend with an OTLP receiver and a REST API
# and builds the two Go programs, each from its own module (go.mod/go.sum pin every dependency):
#   .e2e/bin/otelcol   the OpenTelemetry Collector with the components of collector-config/ (tests/e2e/go/otelcol)
#   .e2e/bin/jaeger    Jaeger v2, the all-in-one (tests/e2e/go/jaeger: `go get -tool .../cmd/jaeger`)
# `e2e-deps.sh go` builds only the Go programs, `e2e-deps.sh python` installs only the venvs.
# Idempotent: a component whose venv already has the pinned version, or a program built from the same
# go.sum, is skipped (a quick check), so the test suite runs this before every e2e session; one run at a
# time (a lock under .e2e/): scripts/test.sh starts the Go builds in the background and a test session
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
case "$WHAT" in all | go | python) ;; *)
  echo "usage: $0 [all|go|python]" >&2
  exit 2
  ;;
esac
mkdir -p "$DIR"
exec 9>"$DIR/.lock"
flock 9

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
  (cd "$module" && go build -mod=readonly -trimpath -buildvcs=false -ldflags="$ldflags" -o "$OLDPWD/$out.tmp" "$package")
  mv "$out.tmp" "$out"
  echo "$marker" >"$out.built"
  echo "e2e-deps: $name built in $((SECONDS - start)) s"
}

if [ "$WHAT" != python ]; then
  command -v go >/dev/null || {
    echo "e2e-deps: the Go toolchain (go) is needed to build the Collector and Jaeger" >&2
    exit 1
  }
  build otelcol tests/e2e/go/otelcol .
  # Jaeger v2.13.0 is the module's v1.76.0 tag; its release build stamps the version the same way.
  build jaeger tests/e2e/go/jaeger github.com/jaegertracing/jaeger/cmd/jaeger \
    "-X github.com/jaegertracing/jaeger/internal/version.latestVersion=v2.13.0"
fi
[ "$WHAT" = go ] && exit 0

install "$DIR/rotel-venv" "rotel==$ROTEL_VERSION" constraints/rotel.txt \
  "$DIR/rotel-venv/bin/python" -c "import pathlib, subprocess, rotel; subprocess.run([str(pathlib.Path(rotel.__file__).parent / 'rotel-agent'), '--version'], check=True)"
install "$DIR/phoenix-venv" "arize-phoenix==$PHOENIX_VERSION" constraints/phoenix.txt "$DIR/phoenix-venv/bin/phoenix" --help
