"""The instrumentation core: tool, agent and plan spans, their context, outcomes and ids, and the hooks
through which the layers above decide calls and processors hear of them."""
