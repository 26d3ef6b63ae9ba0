#!/usr/bin/env bash
# Install the real components the end-to-end tests start (tests/e2e/), each into its own venv under
# .e2e/ (git-ignored), so their dependencies never mix with the test venv:
#   .e2e/rotel-venv    rotel, an OTLP collector whose Rust binary (rotel/rotel-agent) ships in the wheel
#   .e2e/phoenix-venv  arize-phoenix, a trace backend with an OTLP receiver and a REST API
# Idempotent: a component whose venv already has the pinned version is skipped (a quick check), so the
# test suite runs this before every e2e session. constraints/{rotel,phoenix}.txt fix every dependency's
# version, so an upstream release never changes what CI runs. Override the pins with ROTEL_VERSION / PHOENIX_VERSION and the
# interpreter with PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
DIR=.e2e
ROTEL_VERSION=${ROTEL_VERSION:-0.0.1a15}
PHOENIX_VERSION=${PHOENIX_VERSION:-20.26.1}
mkdir -p "$DIR"

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

install "$DIR/rotel-venv" "rotel==$ROTEL_VERSION" constraints/rotel.txt \
  "$DIR/rotel-venv/bin/python" -c "import pathlib, subprocess, rotel; subprocess.run([str(pathlib.Path(rotel.__file__).parent / 'rotel-agent'), '--version'], check=True)"
install "$DIR/phoenix-venv" "arize-phoenix==$PHOENIX_VERSION" constraints/phoenix.txt "$DIR/phoenix-venv/bin/phoenix" --help
