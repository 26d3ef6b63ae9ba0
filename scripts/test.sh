#!/usr/bin/env bash
# Set everything up and run the whole test suite: lint, format check, strict type check, tests
# (the end-to-end tests install and start the real rotel collector and Phoenix backend themselves, and the
# OpenTelemetry Collector and Jaeger built here from their Go modules: Go 1.26 and the Go module proxy).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q -c constraints/test.txt --upgrade pip
# Exact versions from constraints/test.txt: an upstream release never changes what CI runs.
.venv/bin/python -m pip install -q -c constraints/test.txt -e ".[test,threading]"
# The OpenTelemetry Collector and Jaeger, built from their Go modules (minutes on a fresh machine, a quick
# check once built): in the background while the rest is set up and checked; the tests wait for it below.
mkdir -p .e2e
bash scripts/e2e-deps.sh go >.e2e/go-build.log 2>&1 &
GO_BUILD=$!
# Debian's packages the tests drive, installed when missing (`apt-get`, through `sudo` when not root):
# chromium for the trace page tests (through Playwright, never `playwright install`), valgrind for the
# benchmark's instruction counts, Node.js and npm for the real AG-UI and AI SDK clients, PostgreSQL for the
# shared store (the tests start their own server from its binaries, in a temporary directory).
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v valgrind >/dev/null || missing+=(valgrind)
command -v npm >/dev/null || missing+=(nodejs npm)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
if ((${#missing[@]})); then
  SUDO=""
  if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi
# The real Node clients (@ag-ui/client, ai), exactly as locked.
(cd tests/node && npm ci --no-audit --no-fund --loglevel=error)
# Jaeger's UI, built from its source release with npm (about 3 minutes once; cached in .e2e/jaeger-ui), in
# the background beside the Go build.
bash scripts/e2e-deps.sh ui >.e2e/ui-build.log 2>&1 &
UI_BUILD=$!
.venv/bin/ruff check src tests benchmarks examples scripts
.venv/bin/ruff format --check src tests benchmarks examples scripts
.venv/bin/mypy
# The layering: each layer imports only those below it, and no module another package's private modules.
.venv/bin/lint-imports
# The trace page's script (src/toolspan/page/trace/, one file a job): its JSDoc types, checked strictly by
# TypeScript from tests/node's lock, and the node --test tests of its pure helpers.
tests/node/node_modules/.bin/tsc -p tests/page/js/tsconfig.json
node --test tests/page/js/*.test.mjs
# Dead code: no name in src/ that nothing uses (vulture; its settings in pyproject's [tool.vulture], the
# names used only where it cannot see listed with their reasons in scripts/vulture_whitelist.py).
.venv/bin/vulture
# The package as users get it: build the sdist and the wheel (pinned build backend, no network), check
# what they hold, install the wheel alone into a fresh venv and use it from outside the source tree.
rm -rf dist .wheel-venv
.venv/bin/python -m build --no-isolation --sdist --wheel --outdir dist . >/dev/null
.venv/bin/python scripts/smoke_wheel.py --dists dist
"$PY" -m venv .wheel-venv
.wheel-venv/bin/python -m pip install -q -c constraints/test.txt dist/toolspan-*.whl
(cd "$(mktemp -d)" && "$OLDPWD/.wheel-venv/bin/python" -I "$OLDPWD/scripts/smoke_wheel.py")
# The instrumentation core once more on the public fallbacks (no private OpenTelemetry or CPython shortcut),
# so both paths are proven.
TOOLSPAN_OTEL_SHORTCUTS=off .venv/bin/python -m pytest -q -p no:cacheprovider \
  tests/instrument/test_tool.py tests/instrument/test_context.py tests/instrument/test_scopes.py \
  tests/instrument/test_wrappers.py tests/test_init.py tests/runner/test_run.py tests/decisions/test_bypasses.py \
  tests/capture/test_serialize.py tests/instrument/test_outcome.py tests/setup/test_configure.py
# The server once more on the lowest uvicorn the server extra allows (pyproject: uvicorn>=0.31.1; serve.py
# builds on uvicorn's h11 protocol class and Server.capture_signals): the floor is tested, not assumed.
LOWEST_UVICORN=$(sed -n 's/.*"uvicorn>=\([0-9.]*\)".*/\1/p' pyproject.toml | head -1)
if [ ! -x .lowest-venv/bin/python ]; then
  "$PY" -m venv .lowest-venv
fi
.lowest-venv/bin/python -m pip install -q -c constraints/test.txt -e ".[test,threading]"
.lowest-venv/bin/python -m pip install -q --no-deps "uvicorn==$LOWEST_UVICORN"
.lowest-venv/bin/python -m pytest -q -p no:cacheprovider \
  tests/server/test_serve.py tests/server/test_hangups.py tests/server/test_operator.py \
  tests/server/http/test_serve_uvicorn.py
if ! wait "$GO_BUILD"; then
  cat .e2e/go-build.log >&2
  exit 1
fi
if ! wait "$UI_BUILD"; then
  cat .e2e/ui-build.log >&2
  exit 1
fi
grep -h "built in\|already built" .e2e/go-build.log .e2e/ui-build.log || true
.venv/bin/python -m pytest -q "$@"
# The server's tests once more with every test server on PostgreSQL (a fresh database each): the store the
# replicas share keeps every property of the SQLite store. On two test workers, each starting a PostgreSQL of
# its own (the session's server): about half the time of one (docs/development.md).
.venv/bin/python -m pytest -q -p no:cacheprovider -n 2 --store postgres \
  tests/server/test_serve.py tests/server/test_live.py tests/server/test_logs.py tests/server/streams/test_deltas.py \
  tests/server/test_hostile.py tests/server/test_pages.py tests/server/test_operator.py \
  tests/server/test_hangups.py tests/server/ingest/test_parsers.py tests/server/streams/test_trace.py \
  tests/server/streams/test_progress.py tests/server/streams/test_frontend.py tests/approvals/test_live.py \
  tests/decisions/test_replay_source.py tests/frameworks/test_corpus.py tests/approvals/test_server.py \
  tests/server/test_control_live.py \
  tests/server/test_control_page.py \
  tests/server/test_control_hostile.py tests/server/test_resources.py tests/server/test_hostile_json.py
