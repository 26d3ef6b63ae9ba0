"""Spring AI (JVM): a ChatClient agent with ``@Tool`` methods, traced by Spring AI's own Micrometer
Observations, bridged to OpenTelemetry and exported by the OpenTelemetry Java OTLP exporter.

The agent is the Spring Boot application in ``scripts/corpus/jvm/`` (built by ``generate.sh`` with Maven:
``mvn -q -f scripts/corpus/jvm/pom.xml package``). This runner serves its scripted model on loopback (an
OpenAI Chat Completions endpoint answering the script's two turns) and an OTLP/HTTP receiver, runs the
application once, and writes what the exporter sent (every protobuf export request, merged into one) as
``traces.pb`` and ``traces.jsonl``. The Java tools record what they ran with, one JSON line each; they are
the ground truth. Usage: python run_spring_ai.py OUT_DIR
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import _record as rec
from _chat_http import LoopbackChat

JVM = Path(__file__).resolve().parent / "jvm"
JAR = JVM / "target" / "spring-ai-corpus-0.jar"
# The artifacts whose versions the ground truth names, as packed in the application's jar.
ARTIFACTS = (
    "spring-ai-model",
    "spring-ai-client-chat",
    "spring-ai-openai",
    "spring-boot",
    "micrometer-observation",
    "micrometer-tracing-bridge-otel",
    "opentelemetry-sdk",
    "opentelemetry-exporter-otlp",
)


def _versions() -> dict[str, str]:
    names = [Path(n).name for n in zipfile.ZipFile(JAR).namelist() if n.startswith("BOOT-INF/lib/")]
    found: dict[str, str] = {}
    for artifact in ARTIFACTS:
        pattern = re.compile(rf"{re.escape(artifact)}-(\d[\w.-]*)\.jar")
        found[artifact] = next(m.group(1) for n in names if (m := pattern.fullmatch(n)))
    shown = subprocess.run(
        ["java", "-XshowSettings:properties", "-version"], capture_output=True, text=True, check=True
    ).stderr
    found["java"] = re.search(r"^\s*java\.version = (\S+)$", shown, re.MULTILINE).group(1)  # type: ignore[union-attr]
    return found


def main(out: str) -> None:
    chat = LoopbackChat()
    receiver = rec.OtlpReceiver()
    with tempfile.TemporaryDirectory() as scratch:
        ran = Path(scratch) / "ran.jsonl"
        env = {
            **os.environ,
            "SCRIPTED_MODEL_URL": f"{chat.base_url}/v1",
            "OTLP_ENDPOINT": receiver.endpoint,
            "TOOLSPAN_CORPUS_RAN": str(ran),
        }
        done = subprocess.run(
            ["java", "-jar", str(JAR)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            cwd=scratch,
            check=False,
        )
        sys.stderr.write(done.stdout + done.stderr)
        if done.returncode != 0:
            raise SystemExit(f"the Spring AI application failed ({done.returncode})")
        said = dict(
            line.split(": ", 1)
            for line in done.stdout.splitlines()
            if line.startswith(("ANSWER: ", "ENDED_BY: "))
        )
        ended_by = said.get("ENDED_BY")
        if said.get("ANSWER", rec.FINAL_ANSWER) != rec.FINAL_ANSWER or not said:
            raise SystemExit(f"unexpected outcome: {said}")
        for line in ran.read_text(encoding="utf-8").splitlines():
            rec._ran.append(json.loads(line))
    chat.close()
    receiver.close()
    if chat.chat.turn != (1 if ended_by else len(rec.USAGE)):
        raise SystemExit(f"the model was called {chat.chat.turn} times")
    request = receiver.request()
    spans = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
    rec.write_request(Path(out), request)
    rec.write_truth(Path(out), "spring_ai", _versions(), ended_by=ended_by)
    print(f"spring_ai: {spans} spans, {len(rec._ran)} tool calls -> {out}")  # noqa: T201


if __name__ == "__main__":
    main(sys.argv[1])
