"""An application that already set up OpenTelemetry adds toolspan without changing any of it.

    python examples/existing_provider.py [OUT_DIR]

What it shows: the application owns its ``TracerProvider`` (its resource, a sampler that drops health
checks, its own exporter writing ``OUT_DIR/app-spans.jsonl``). ``toolspan.configure()`` finds it, keeps
it (no second provider, no new exporter, same resource and sampler) and only sets toolspan's capture
settings; tool spans then flow through the application's pipeline: children of its request spans,
under its ``service.name``, and dropped with the health check the sampler drops. What to look at: the
printed spans (``execute_tool lookup_order`` under ``POST /chat``; nothing from ``GET /health``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
from opentelemetry.sdk.trace.sampling import Decision, ParentBased, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind
from opentelemetry.util.types import Attributes

import toolspan


class DropHealthChecks(Sampler):
    """The application's own sampler: health-check requests are not traced."""

    def should_sample(  # noqa: PLR0917 (the SDK's signature)
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: Any = None,
    ) -> SamplingResult:
        decision = Decision.DROP if name.startswith("GET /health") else Decision.RECORD_AND_SAMPLE
        return SamplingResult(decision, attributes)

    def get_description(self) -> str:
        return "DropHealthChecks"


def setup_application_telemetry(out: Path) -> TracerProvider:
    """What the application did long before toolspan: untouched below."""
    provider = TracerProvider(
        resource=Resource.create({"service.name": "shop-backend", "deployment.environment": "staging"}),
        sampler=ParentBased(root=DropHealthChecks()),
    )
    sink = (out / "app-spans.jsonl").open("w", encoding="utf-8")
    exporter = ConsoleSpanExporter(out=sink, formatter=lambda span: span.to_json(indent=None) + "\n")
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider


@toolspan.tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up."""
    return {"order_id": order_id, "status": "shipped"}


@toolspan.tool
def ping() -> str:
    """Health probe."""
    return "pong"


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    app_provider = setup_application_telemetry(out)
    resource, sampler = app_provider.resource, app_provider.sampler

    provider = toolspan.configure(service_name="ignored-the-app-has-one")  # adds toolspan, changes nothing
    kept = {
        "provider": provider is app_provider is trace.get_tracer_provider(),
        "resource": app_provider.resource is resource,
        "sampler": app_provider.sampler is sampler,
    }
    if not all(kept.values()):
        raise SystemExit(f"toolspan changed the application's telemetry: {kept}")
    print(f"toolspan kept the application's provider, resource and sampler ({sampler.get_description()})")

    tracer = trace.get_tracer("shop.http")
    with tracer.start_as_current_span("POST /chat", kind=SpanKind.SERVER):
        calls = [
            {"type": "tool_use", "id": "toolu_01Order", "name": "lookup_order", "input": {"order_id": "A-17"}}
        ]
        print("results:", toolspan.run_tool_calls(calls, [lookup_order]))
    with tracer.start_as_current_span("GET /health", kind=SpanKind.SERVER):
        ping()  # not sampled, like the request it runs in
    app_provider.shutdown()

    for line in (out / "app-spans.jsonl").read_text(encoding="utf-8").splitlines():
        span = json.loads(line)
        service = span["resource"]["attributes"]["service.name"]
        print(
            f"{span['name']:<26} span {span['context']['span_id']}  parent {span['parent_id']}  ({service})"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-output") / Path(__file__).stem)
