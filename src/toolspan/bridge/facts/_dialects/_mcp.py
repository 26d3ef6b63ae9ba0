"""The MCP SDK's own records of its calls, marked by ``mcp.method.name``: its client's ``MCP send tools/call
{name}`` span and its server's ``tools/call {name}`` span (which also says ``gen_ai.operation.name``
``execute_tool``, so it is a tool span by GenAI's rule).

Read as GenAI: nothing of its own but whether a tool span is such a record (``transport_record``), the
transport leg of the call a tool span of the same tool above it made, the call itself when nothing above
it is (a client that traces nothing). OpenLLMetry's MCP instrumentation's records are OpenLLMetry's
(``_openllmetry``).
"""

from __future__ import annotations

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect
from toolspan.bridge.model import Span

__all__ = ["MCP"]


def _transport_record(span: Span) -> bool:
    return sc.MCP_METHOD_NAME in span.attributes


MCP = Dialect(precedence=170, name="MCP", transport_record=_transport_record)
