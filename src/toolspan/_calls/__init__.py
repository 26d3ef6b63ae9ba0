"""The call runner: a model's tool calls run against a registry, results shaped for the model."""
