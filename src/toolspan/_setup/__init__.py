"""Setting OpenTelemetry up for toolspan: ``configure()`` (``configure``: the capture settings, a tracer
provider only when the application has none, the policy guard, the threading instrumentation), the span
exporters it names and attaches (``exporting``) and the logs pipeline of text deltas (``logs``)."""
