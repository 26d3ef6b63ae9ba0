"""The span kinds the bridge knows (what ``classify`` answers); a leaf module."""

from __future__ import annotations

from typing import Final

__all__ = ["AGENT", "CHAIN", "LLM", "OTHER", "PLAN", "RETRIEVER", "TOOL"]

TOOL: Final = "tool"
AGENT: Final = "agent"
PLAN: Final = "plan"
LLM: Final = "llm"
CHAIN: Final = "chain"
RETRIEVER: Final = "retriever"
OTHER: Final = "other"
