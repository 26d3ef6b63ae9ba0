"""The names in src/toolspan that vulture finds unused but something uses: the dead-code check's whitelist.

scripts/test.sh runs ``vulture`` (its settings in pyproject's ``[tool.vulture]``: src/toolspan and this file,
``min_confidence = 60``). 60 is vulture's lowest confidence, the one it gives every unused function, method,
class, attribute and variable (only unused imports, 90, and unreachable code, 100, rank higher): a name that
nothing in src/ uses fails the check whatever kind of name it is. Dead code is removed, not listed here; a
name is listed only when it is used where vulture cannot see: a method another library calls (a protocol), an
attribute another library reads, or a name of the public API that toolspan's users read and src/ does not.
Each entry says which. Unreachable code kept on purpose (a ``yield`` after ``raise`` that makes a function a
generator) carries ``# noqa: V201`` where it is.

vulture only reads this file (it matches names, not objects), so the entries are attribute reads of ``_``.
"""

# ruff: noqa: B018, F821

# Methods another library calls.
_.on_start  # SpanProcessor.on_start: the SDK calls it (exporters/live.py, exporters/pending.py)
_.generate_span_id  # IdGenerator: the SDK calls it (testing.py's deterministic ids)
_.generate_trace_id  # IdGenerator: the SDK calls it (testing.py's deterministic ids)
_.readable  # io.RawIOBase: io.BufferedReader asks it (backends/_http.py, bridge/readers/_sources.py)
_.redirect_request  # urllib's HTTPRedirectHandler calls it (_util/http.py: no redirect)
_.http_open  # urllib's OpenerDirector calls <scheme>_open (backends/_http.py)
_.https_open  # urllib's OpenerDirector calls <scheme>_open (backends/_http.py)
_.http_error_301  # urllib's OpenerDirector calls http_error_<code> (backends/_http.py)
_.http_error_303  # same
_.http_error_307  # same
_.http_error_308  # same
_.accept  # socket.accept: uvicorn's server calls it on the listening socket (server/_http/listen.py)
_.capture_signals  # uvicorn.Server.capture_signals, overridden (server/_http/serve.py)
_.pause_writing  # asyncio.Protocol: the event loop's pipe transport calls it (server/_ingest/parsers.py)
_.resume_writing  # same
_.Export  # the OTLP gRPC services' method, called by grpcio (server/_ingest/grpc.py)

# Attributes another library reads.
_.response_class  # http.client.HTTPConnection reads it for each response (backends/_http.py)
_.force_exit  # uvicorn.Server reads it: a second Ctrl-C (server/_http/serve.py)
_._PROXY_TRACER_PROVIDER  # opentelemetry.trace's global, reset for a swap (_util/otel_internals.py)
_.log_errors  # re2.Options: no RE2 message on stderr (policy/_patterns.py)
_.map_entry  # protobuf's MessageOptions: a map's entry type (server/_ingest/protobuf.py)
_.rejected_spans  # OTLP's partial_success, read by the exporter that sent the request
_.rejected_log_records  # same

# The public API: read by toolspan's users, not by src/.
_.set_input  # Run.set_input: an agent's or a plan's input learned after its start (docs/instrumenting.md)
_.forget  # ApprovalBook.forget (docs/approvals.md)
_.duration_ns  # toolspan.bridge.model.Span.duration_ns
_.sources_read  # ReadReport.sources_read: what read_spans read (toolspan.bridge.readers)
_.evicted_traces  # TimelineJsonExporter.evicted_traces: unfinished traces written early
_.accepted  # IngestResult.accepted: what a store's ingest kept (the server's store API)
_.duplicates  # IngestResult.duplicates: what a store's ingest had already
_.parent_execution_id  # ToolCallRecord.parent_execution_id (toolspan.bridge.facts)
_.parent_call_id  # ToolCallRecord.parent_call_id (toolspan.bridge.facts)
_.TOOL_TYPE_EXTENSION  # semconv: a gen_ai.tool.type value for @tool(tool_type=...)
_.TOOL_TYPE_DATASTORE  # semconv: a gen_ai.tool.type value for @tool(tool_type=...)

# Names read only inside a string annotation, which vulture does not parse.
_.Source  # bridge/readers/_sources.py: the alias ``Sources = "Source | Iterable[Source]"`` names it
