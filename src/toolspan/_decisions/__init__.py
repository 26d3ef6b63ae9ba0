"""The decision chain: policy, approvals and replay decide whether, and how, a tool body runs."""
