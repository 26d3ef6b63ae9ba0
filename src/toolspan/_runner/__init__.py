"""The call runner: ``run_tool_calls`` runs a model's tool calls against a registry (``run``), read from and
answered in each model API's own shapes (``shapes``)."""
