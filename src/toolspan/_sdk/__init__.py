"""SDK setup: ``configure()``, the span processors and exporters it attaches, the logs pipeline."""
