#!/usr/bin/env bash
# Regenerate the framework trace corpus under tests/corpus/: each framework in its own virtual
# environment with the exact versions pinned in scripts/corpus/<framework>.txt, run offline against a
# scripted model (no network, no key). Usage: bash scripts/corpus/generate.sh [framework ...]
# Environments go to $CORPUS_VENVS (default .corpus-venvs/, ignored by git); PYTHON picks the interpreter.
# JavaScript frameworks (env "node") run with Node.js from scripts/corpus/node/, installed from its lock.
# Go frameworks (env "go") run with Go (1.26 or newer) from scripts/corpus/go/, at the versions its go.mod and
# go.sum pin (the modules come from the Go module proxy; the run itself is offline, against a scripted model
# on loopback, its spans exported over OTLP/HTTP to a receiver on loopback). Only regenerating needs Go: the
# tests read the recorded files.
# JVM frameworks (env "jvm") need a JDK (17 or later) and Maven: the application in scripts/corpus/jvm/ is
# built with Maven (its dependencies from Maven Central into the local repository, its build in
# scripts/corpus/jvm/target/), then its runner, in the environment pinned by scripts/corpus/jvm.txt, serves
# the scripted model and an OTLP receiver on loopback and runs it (offline: no network, no key).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON="${PYTHON:-python3}"
VENVS="${CORPUS_VENVS:-.corpus-venvs}"
OUT="tests/corpus"

# name | pinned requirements | runner and its arguments
RUNS=(
  "pydantic_ai|pydantic_ai|run_pydantic_ai.py"
  "openai_agents|openai_agents|run_openai_agents.py"
  "langgraph_openinference|langgraph_openinference|run_langgraph.py openinference"
  "langgraph_openllmetry|langgraph_openllmetry|run_langgraph.py openllmetry"
  "strands_default|strands|run_strands.py default"
  "strands_latest|strands|run_strands.py latest"
  "smolagents|smolagents|run_smolagents.py"
  "openai_v2|openai_v2|run_openai_v2.py"
  "google_adk_default|google_adk|run_google_adk.py default"
  "google_adk_legacy|google_adk|run_google_adk.py legacy"
  "google_adk_default_raising|google_adk|run_google_adk.py default_raising"
  "google_adk_legacy_raising|google_adk|run_google_adk.py legacy_raising"
  "semantic_kernel|semantic_kernel|run_semantic_kernel.py"
  "llamaindex_openinference|llamaindex_openinference|run_llamaindex.py chat"
  "llamaindex_openinference_streaming|llamaindex_openinference|run_llamaindex.py streaming"
  "haystack|haystack|run_haystack.py"
  "crewai_openinference|crewai_openinference|run_crewai.py"
  "agno_openinference|agno_openinference|run_agno.py"
  "autogen_agentchat|autogen|run_autogen.py"
  "mlflow_native|mlflow|run_mlflow.py native"
  "mlflow_genai|mlflow|run_mlflow.py genai"
  "logfire_openai_agents|logfire|run_logfire.py"
  "dspy_react|dspy|run_dspy.py"
  "langfuse_openai|langfuse|run_langfuse.py"
  "agent_framework|agent_framework|run_agent_framework.py"
  "beeai_openinference|beeai|run_beeai.py"
  "vercel_ai_generate|node|run_vercel_ai.mjs generate"
  "vercel_ai_stream|node|run_vercel_ai.mjs stream"
  "langgraph_js_openinference|node|run_langgraph_js.mjs"
  "openai_agents_js|node|run_openai_agents_js.mjs"
  "genkit_go|go|genkit"
  "google_adk_js|node|run_google_adk_js.mjs"
  "spring_ai|jvm|run_spring_ai.py"
  "mcp_openllmetry|mcp_openllmetry|run_mcp_openllmetry.py"
  "openai_agents_openllmetry|openai_agents_openllmetry|run_openai_agents_openllmetry.py"
)
# Runs whose agent loop is toolspan's own: the repository is installed into their environment too.
WITH_TOOLSPAN=" openai_v2 "

wanted=("$@")
for run in "${RUNS[@]}"; do
  IFS='|' read -r name env runner <<<"$run"
  if ((${#wanted[@]})) && [[ ! " ${wanted[*]} " == *" $name "* ]]; then
    continue
  fi
  rm -rf "${OUT:?}/$name"
  read -r script args <<<"$runner"
  mkdir -p "$VENVS"
  if [[ "$env" == go ]]; then
    out_dir="$PWD/$OUT/$name"
    # shellcheck disable=SC2086  # the runner's arguments are words
    (cd scripts/corpus/go && go run "./$script" "$out_dir" $args) >/dev/null 2>"$VENVS/$name.log" ||
      { echo "$name failed: see $VENVS/$name.log" >&2; exit 1; }
    echo "$name: $(ls "$OUT/$name" | tr '\n' ' ')"
    continue
  fi
  if [[ "$env" == node ]]; then
    (cd scripts/corpus/node && npm ci --no-audit --no-fund --silent)
    # shellcheck disable=SC2086  # the runner's arguments are words
    node "scripts/corpus/node/$script" "$OUT/$name" $args >/dev/null 2>"$VENVS/$name.log" ||
      { echo "$name failed: see $VENVS/$name.log" >&2; exit 1; }
    echo "$name: $(ls "$OUT/$name" | tr '\n' ' ')"
    continue
  fi
  if [[ "$env" == jvm ]]; then
    mvn -q -B -f scripts/corpus/jvm/pom.xml -DskipTests package >"$VENVS/$name.mvn.log" 2>&1 ||
      { echo "$name: the Maven build failed: see $VENVS/$name.mvn.log" >&2; exit 1; }
  fi
  venv="$VENVS/$env"
  if [[ ! -x "$venv/bin/python" ]]; then
    "$PYTHON" -m venv "$venv"
  fi
  "$venv/bin/pip" install -q --disable-pip-version-check -r "scripts/corpus/$env.txt"
  if [[ "$WITH_TOOLSPAN" == *" $name "* ]]; then
    "$venv/bin/pip" install -q --disable-pip-version-check --no-deps -e .
  fi
  # shellcheck disable=SC2086  # the runner's arguments are words
  "$venv/bin/python" "scripts/corpus/$script" "$OUT/$name" $args >/dev/null 2>"$VENVS/$name.log" ||
    { echo "$name failed: see $VENVS/$name.log" >&2; exit 1; }
  echo "$name: $(ls "$OUT/$name" | tr '\n' ' ')"
done
