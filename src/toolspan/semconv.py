"""Every span, attribute and event name toolspan writes or reads, in one place.

The OpenTelemetry GenAI names are kept here as plain strings of our own: the upstream
``opentelemetry.semconv._incubating`` constants are deprecated and move between releases. toolspan writes
only the registry's current names, of the registry's types; where the registry renamed an attribute the
bridge reads, it reads the older name too (``gen_ai.usage.prompt_tokens`` / ``completion_tokens``), and it
reads the older content events (``gen_ai.user.message``, ``gen_ai.choice``, ...). The tests check this
against the GenAI registry of the ``opentelemetry-semantic-conventions`` release the project pins.
toolspan's own names live under ``toolspan.``. OpenInference and OpenLLMetry names are listed
because toolspan writes the former (so Phoenix-style UIs render its spans) and the bridge reads both.
"""

from __future__ import annotations

from typing import Final

# --- OpenTelemetry GenAI semantic conventions -------------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
GEN_AI_TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_AGENT_ID: Final = "gen_ai.agent.id"
GEN_AI_AGENT_DESCRIPTION: Final = "gen_ai.agent.description"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"

# Values of gen_ai.operation.name
OP_EXECUTE_TOOL: Final = "execute_tool"
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_CREATE_AGENT: Final = "create_agent"
OP_CHAT: Final = "chat"
OP_TEXT_COMPLETION: Final = "text_completion"
OP_GENERATE_CONTENT: Final = "generate_content"
OP_EMBEDDINGS: Final = "embeddings"

# Values of gen_ai.tool.type
TOOL_TYPE_FUNCTION: Final = "function"
TOOL_TYPE_EXTENSION: Final = "extension"
TOOL_TYPE_DATASTORE: Final = "datastore"

# --- General OpenTelemetry ----------------------------------------------------------------------
ERROR_TYPE: Final = "error.type"
SERVICE_NAME: Final = "service.name"
EXCEPTION_EVENT: Final = "exception"
EXCEPTION_TYPE: Final = "exception.type"
EXCEPTION_MESSAGE: Final = "exception.message"
EXCEPTION_STACKTRACE: Final = "exception.stacktrace"

# Jaeger / OpenTracing tags that carry what OTLP has as fields (read by the bridge's Jaeger reader).
JAEGER_SPAN_KIND: Final = "span.kind"
JAEGER_ERROR: Final = "error"
# Jaeger's own notes on a span it changed (API v3: this attribute; API v1: the span's ``warnings``).
JAEGER_WARNINGS: Final = "@jaeger@warnings"
OTEL_STATUS_CODE: Final = "otel.status_code"
OTEL_STATUS_DESCRIPTION: Final = "otel.status_description"
OTEL_SCOPE_NAME: Final = "otel.scope.name"
OTEL_SCOPE_VERSION: Final = "otel.scope.version"
OTEL_LIBRARY_NAME: Final = "otel.library.name"  # older name of otel.scope.name
OTEL_LIBRARY_VERSION: Final = "otel.library.version"
OPENTRACING_REF_TYPE: Final = "opentracing.ref_type"  # "child_of" | "follows_from" on links

# --- OpenInference (Arize Phoenix) ----------------------------------------------------------------
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
OI_TOOL_NAME: Final = "tool.name"
OI_TOOL_DESCRIPTION: Final = "tool.description"
OI_TOOL_PARAMETERS: Final = "tool.parameters"
OI_METADATA: Final = "metadata"  # JSON text
OI_PROMPT_TEMPLATE_VARIABLES: Final = "llm.prompt_template.variables"  # JSON text
OI_TOOL_CALL_ID: Final = "tool_call.id"
OI_INPUT_VALUE: Final = "input.value"
OI_INPUT_MIME_TYPE: Final = "input.mime_type"
OI_OUTPUT_VALUE: Final = "output.value"
OI_OUTPUT_MIME_TYPE: Final = "output.mime_type"
OI_AGENT_NAME: Final = "agent.name"
OI_SESSION_ID: Final = "session.id"
OI_KIND_TOOL: Final = "TOOL"
OI_KIND_AGENT: Final = "AGENT"
OI_KIND_LLM: Final = "LLM"
OI_KIND_CHAIN: Final = "CHAIN"
MIME_JSON: Final = "application/json"

# --- OpenLLMetry (Traceloop) ------------------------------------------------------------------------
TRACELOOP_SPAN_KIND: Final = "traceloop.span.kind"  # workflow | task | agent | tool
TRACELOOP_ENTITY_NAME: Final = "traceloop.entity.name"
TRACELOOP_ENTITY_INPUT: Final = "traceloop.entity.input"
TRACELOOP_ENTITY_OUTPUT: Final = "traceloop.entity.output"

# --- toolspan's own ----------------------------------------------------------------------------------
TOOLSPAN_EXECUTION_ID: Final = "toolspan.execution_id"
TOOLSPAN_TOOL_CALL_ID: Final = "toolspan.tool_call_id"
TOOLSPAN_TOOL_STATE: Final = "toolspan.tool.state"
TOOLSPAN_PLAN_NAME: Final = "toolspan.plan.name"
TOOLSPAN_PARENT_EXECUTION_ID: Final = "toolspan.parent.execution_id"
TOOLSPAN_PARENT_TOOL_CALL_ID: Final = "toolspan.parent.tool_call_id"
TOOLSPAN_STREAM_TEXT: Final = "toolspan.stream.text"  # aggregate of the text_delta chunks of a span
TOOLSPAN_STREAM_TRUNCATED: Final = "toolspan.stream.truncated"  # true when the aggregate hit the budget
TOOLSPAN_RESULT_ITEMS: Final = "toolspan.result.items"  # how many items a generator tool yielded
# Replay (toolspan.replay): whether the call was served from the recording, how it matched, and its original.
TOOLSPAN_REPLAY_SERVED: Final = "toolspan.replay.served"  # true: recorded result, body not run
TOOLSPAN_REPLAY_MATCH: Final = "toolspan.replay.match"  # "call_id" | "arguments"
TOOLSPAN_REPLAY_SOURCE_TRACE_ID: Final = "toolspan.replay.source.trace_id"
TOOLSPAN_REPLAY_SOURCE_EXECUTION_ID: Final = "toolspan.replay.source.execution_id"
# Live policy checks (configure(policy=...)): set on a tool span the policy denied.
TOOLSPAN_POLICY_ID: Final = "toolspan.policy.id"
TOOLSPAN_POLICY_VERSION: Final = "toolspan.policy.version"
TOOLSPAN_POLICY_RULES: Final = "toolspan.policy.rules"  # ids of the rules the call broke, in policy order

# Events recorded on spans
THOUGHT_EVENT: Final = "toolspan.thought"
THOUGHT_CONTENT: Final = "toolspan.thought.content"
PERMISSION_REQUIRED_EVENT: Final = "toolspan.permission_required"
PERMISSION_DECIDED_EVENT: Final = "toolspan.permission_decided"
PERMISSION_DECISION: Final = "toolspan.permission.decision"  # a word of toolspan._util.words.DECISIONS
PERMISSION_NOTE: Final = "toolspan.permission.note"
# Who or what decided: a person's id, "policy" (configure(policy=...)), or what the approver says.
PERMISSION_DECIDED_BY: Final = "toolspan.permission.decided_by"
PERMISSION_LATENCY_MS: Final = "toolspan.permission.latency_ms"  # int: from required to decided
# The arguments an approver edited (JSON, captured and redacted like gen_ai.tool.call.arguments, which
# keeps the model's own); the tool ran with these.
TOOLSPAN_TOOL_CALL_EDITED_ARGUMENTS: Final = "toolspan.tool.call.edited_arguments"
# The digest of the whole edit, written when its captured copy may differ from it (as the arguments').
TOOLSPAN_TOOL_CALL_EDITED_ARGUMENTS_DIGEST: Final = "toolspan.tool.call.edited_arguments.digest"
# "sha256:<hex>" of the canonical JSON (sorted keys, no spaces) of the call's whole arguments, written when
# the captured copy may differ from them (cut at the byte budget, redacted, converted): replay tells calls
# apart by it, whatever the budget of the recording and of the replaying process.
TOOLSPAN_TOOL_CALL_ARGUMENTS_DIGEST: Final = "toolspan.tool.call.arguments.digest"
# true when the captured result may differ from what the tool returned (cut at the byte budget, redacted,
# converted): replay never serves such a result.
TOOLSPAN_TOOL_CALL_RESULT_INEXACT: Final = "toolspan.tool.call.result.inexact"
# JSON Schema (text) of the tool's parameters, written on a call that asks for its approval: toolspan serve
# checks a decider's edit of the arguments against it (not content: it describes the tool, not the call).
TOOLSPAN_TOOL_PARAMETERS: Final = "toolspan.tool.parameters"
# On a tool span that resumes an approval after a restart: the execution_id of the span that waited (also
# a span link to it, whose attribute toolspan.link.type is "resumes_approval").
# On a tool span cancelled on request (toolspan serve's control channel): who asked, and why.
TOOLSPAN_TOOL_CANCELLED_BY: Final = "toolspan.tool.cancelled_by"
TOOLSPAN_TOOL_CANCEL_NOTE: Final = "toolspan.tool.cancel_note"
TOOLSPAN_APPROVAL_RESUMES: Final = "toolspan.approval.resumes"
TOOLSPAN_LINK_TYPE: Final = "toolspan.link.type"
LINK_TYPE_RESUMES_APPROVAL: Final = "resumes_approval"
# OpenTelemetry context key (not an attribute): set by run_tool_calls(approve=...) around a call it gates, so
# the pending processor sends no "running" start record for it: its first record says it awaits approval.
CONTEXT_APPROVAL_GATE: Final = "toolspan.approval_gate"
GENERATOR_CLOSED_EVENT: Final = "toolspan.generator.closed"
# Event name of the OpenTelemetry log record carrying one text_delta chunk (body: the text): relayed
# live by toolspan serve, never stored.
TEXT_DELTA_EVENT: Final = "toolspan.text_delta"

# W3C baggage entries written by toolspan.inject() inside a tool: the ids of that tool call, so a
# sub-plan started from the carrier in another process sets toolspan.parent.*.
BAGGAGE_EXECUTION_ID: Final = "toolspan.execution_id"
BAGGAGE_TOOL_CALL_ID: Final = "toolspan.tool_call_id"

# Values of toolspan.tool.state: the tool state machine of the progress stream.
STATE_PENDING: Final = "PENDING"
STATE_AWAITING_APPROVAL: Final = "AWAITING_APPROVAL"
STATE_RUNNING: Final = "RUNNING"
STATE_COMPLETED: Final = "COMPLETED"
STATE_FAILED: Final = "FAILED"
STATE_DENIED: Final = "DENIED"
STATE_CANCELLED: Final = "CANCELLED"
STATE_SEALED: Final = "SEALED"
# The one list of each, read by the server, the bridge and the pages (from the config the server gives them):
# a tool call's states, in the order the trace page's legend shows them; a trace's states (its listing's
# ``state``), and those of a trace still live, in the order the trace list offers them.
TOOL_STATES: Final = (
    STATE_COMPLETED,
    STATE_FAILED,
    STATE_CANCELLED,
    STATE_DENIED,
    STATE_SEALED,
    STATE_RUNNING,
    STATE_AWAITING_APPROVAL,
    STATE_PENDING,
)
TRACE_STATES: Final = (
    STATE_RUNNING,
    STATE_AWAITING_APPROVAL,
    STATE_COMPLETED,
    STATE_FAILED,
    STATE_CANCELLED,
    STATE_DENIED,
    STATE_SEALED,
)
LIVE_TRACE_STATES: Final = (STATE_AWAITING_APPROVAL, STATE_RUNNING)

# Id prefixes (the ids are built by toolspan._util.ids): execution_id = "exec_" + 16-hex span id;
# synthesized call id = "call_" + 16-hex span id.
EXECUTION_ID_PREFIX: Final = "exec_"
CALL_ID_PREFIX: Final = "call_"
PLAN_ID_PREFIX: Final = "plan_"  # plan_id = "plan_" + span id (a trace's synthetic plan: + trace id)

# Span names
TOOL_SPAN_PREFIX: Final = "execute_tool "
AGENT_SPAN_PREFIX: Final = "invoke_agent "
PLAN_SPAN_PREFIX: Final = "plan "

# Instrumentation scope
SCOPE_NAME: Final = "toolspan"
# The semantic conventions toolspan's spans follow, declared on its tracer's instrumentation scope: the
# schema of the ``opentelemetry-semantic-conventions`` release the project pins (0.66b1: schema 1.44.0; the
# tests check it is that release's newest schema).
SCHEMA_URL: Final = "https://opentelemetry.io/schemas/1.44.0"

# --- Read by the bridge (toolspan.bridge.facts) ---------------------------------------------------
OP_RETRIEVAL: Final = "retrieval"
OP_INVOKE_WORKFLOW: Final = "invoke_workflow"
OP_PLAN: Final = "plan"  # an agent's planning step (not a toolspan plan, which toolspan.plan.name marks)
OP_SEARCH_MEMORY: Final = "search_memory"
OI_KIND_RETRIEVER: Final = "RETRIEVER"
OI_TOOL_ID: Final = "tool.id"  # OpenInference: id of the tool call a TOOL span executes
OI_KIND_EMBEDDING: Final = "EMBEDDING"
TRACELOOP_KIND_TOOL: Final = "tool"
TRACELOOP_KIND_AGENT: Final = "agent"
TRACELOOP_KIND_WORKFLOW: Final = "workflow"
TRACELOOP_KIND_TASK: Final = "task"
# Jaeger/OpenTracing boolean tag marking a failed span (readers may leave it as an attribute).
LEGACY_ERROR_TAG: Final = "error"
# error.type values (unqualified or module-qualified class names) that mean "cancelled", not "failed".
CANCELLATION_ERROR_TYPES: Final = frozenset(
    {
        "CancelledError",
        "asyncio.CancelledError",
        "asyncio.exceptions.CancelledError",
        "concurrent.futures.CancelledError",
        "concurrent.futures._base.CancelledError",
        "KeyboardInterrupt",
        "GeneratorExit",
        "toolspan.ToolCancelled",
    }
)

# --- Read by the bridge only: content events, model requests and usage (issue 9) -------------
EVENT_OPERATION_DETAILS_SUFFIX: Final = "operation.details"  # gen_ai.client.inference.operation.details
EVENT_GEN_AI_USER_MESSAGE: Final = "gen_ai.user.message"
EVENT_GEN_AI_SYSTEM_MESSAGE: Final = "gen_ai.system.message"
EVENT_GEN_AI_ASSISTANT_MESSAGE: Final = "gen_ai.assistant.message"
EVENT_GEN_AI_TOOL_MESSAGE: Final = "gen_ai.tool.message"
EVENT_GEN_AI_CHOICE: Final = "gen_ai.choice"
LOG_EVENT_NAME: Final = "event.name"  # a log record's event name, when the record has no EventName field
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_REASONING_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
# The registry's older names of gen_ai.usage.input_tokens and output_tokens: read, never written.
GEN_AI_USAGE_PROMPT_TOKENS: Final = "gen_ai.usage.prompt_tokens"
GEN_AI_USAGE_COMPLETION_TOKENS: Final = "gen_ai.usage.completion_tokens"
# OpenInference flattened messages: llm.output_messages.<i>.message.tool_calls.<j>.tool_call.<field>
OI_LLM_MODEL_NAME: Final = "llm.model_name"
OI_LLM_OUTPUT_MESSAGES: Final = "llm.output_messages"
OI_LLM_INPUT_MESSAGES: Final = "llm.input_messages"
OI_LLM_FINISH_REASON: Final = "llm.finish_reason"
OI_TOKEN_COUNT_PROMPT: Final = "llm.token_count.prompt"
OI_TOKEN_COUNT_COMPLETION: Final = "llm.token_count.completion"
OI_TOKEN_COUNT_CACHE_READ: Final = "llm.token_count.prompt_details.cache_read"
OI_TOKEN_COUNT_REASONING: Final = "llm.token_count.completion_details.reasoning"
# OpenLLMetry's flattened completions: gen_ai.completion.<i>.tool_calls.<j>.<id|name|arguments>
TRACELOOP_COMPLETION_PREFIX: Final = "gen_ai.completion."
# The MCP SDK's own spans: "MCP send tools/call {name}" (CLIENT) and "tools/call {name}" (SERVER, which
# also says gen_ai.operation.name = execute_tool).
MCP_METHOD_NAME: Final = "mcp.method.name"
# OpenLLMetry's MCP instrumentation (opentelemetry-instrumentation-mcp) writes both sides of a call under
# this scope: the client's "{name}.tool" span (traceloop.entity.input {"tool_name", "arguments"}) and the
# server's "mcp.server" span (traceloop.span.kind "server") with its "{name}.tool" span inside.
TRACELOOP_MCP_SCOPE: Final = "opentelemetry.instrumentation.mcp"

# --- markers in captured values (JSON text written by toolspan) -----------------------------------------
# A value cut at the byte budget carries TRUNCATION_MARKER: a string ends with "...[truncated N chars]", an
# array's last element is "...[truncated N items]", an object's last key is "...[truncated]"; a value whose
# structure could not fit becomes {"toolspan.truncated": true, "preview": "..."}. A redacted value is
# REDACTED_VALUE. Readers (the policy audit, replay) treat such values as unknown, never as the real value.
TRUNCATION_MARKER: Final = "...[truncated"
TRUNCATION_FALLBACK_KEY: Final = "toolspan.truncated"
REDACTED_VALUE: Final = "[REDACTED]"
# --- Read by the bridge only: the frameworks' own conventions (issue 20, docs/frameworks.md) --------
# Google ADK: its legacy schema (ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1) keeps content in these; its
# ``call_llm`` span (the model call) holds the model's response, ``execute_tool`` spans the tool's.
ADK_LLM_REQUEST: Final = "gcp.vertex.agent.llm_request"
ADK_LLM_RESPONSE: Final = "gcp.vertex.agent.llm_response"
ADK_TOOL_CALL_ARGS: Final = "gcp.vertex.agent.tool_call_args"
ADK_TOOL_RESPONSE: Final = "gcp.vertex.agent.tool_response"
# ADK's span of merged parallel responses (for its web UI; runs no tool) and its placeholder value.
ADK_MERGED_TOOLS: Final = "(merged tools)"
ADK_NOT_SPECIFIED: Final = "<not specified>"
# Haystack's own tracer (haystack.tracing, OpenTelemetry backend).
HAYSTACK_TOOL_NAME: Final = "haystack.tool.name"
HAYSTACK_TOOL_INPUT: Final = "haystack.agent.step.tool.input"
HAYSTACK_TOOL_OUTPUT: Final = "haystack.agent.step.tool.output"
HAYSTACK_TOOL_ERROR: Final = "haystack.tool.error"
HAYSTACK_AGENT_RUN: Final = "haystack.agent.run"
HAYSTACK_AGENT_INPUT: Final = "haystack.agent.input"
HAYSTACK_AGENT_OUTPUT: Final = "haystack.agent.output"
HAYSTACK_LLM_OUTPUT: Final = "haystack.agent.step.llm.output"
HAYSTACK_LLM_STEP: Final = "haystack.agent.step.llm"
HAYSTACK_TOOL_STEP: Final = "haystack.agent.step.tool"
# LlamaIndex (via OpenInference): the LLM-kind span of the method that only prepares a request.
LLAMAINDEX_PREPARE_CHAT: Final = "._prepare_chat_with_tools"
# --- Read by the bridge only: frameworks whose own attribute names say what GenAI says elsewhere (issue 29,
# docs/frameworks.md; toolspan.bridge.facts._dialects turns them into GenAI names) -----------------------
# The Vercel AI SDK (``ai``, experimental_telemetry): every span says what it is in ai.operationId.
VERCEL_OPERATION_ID: Final = "ai.operationId"
VERCEL_TOOL_CALL: Final = "ai.toolCall"
VERCEL_TOOL_CALL_NAME: Final = "ai.toolCall.name"
VERCEL_TOOL_CALL_ID: Final = "ai.toolCall.id"
VERCEL_TOOL_CALL_ARGS: Final = "ai.toolCall.args"
VERCEL_TOOL_CALL_RESULT: Final = "ai.toolCall.result"
VERCEL_FUNCTION_ID: Final = "ai.telemetry.functionId"
VERCEL_PROMPT: Final = "ai.prompt"
VERCEL_PROMPT_MESSAGES: Final = "ai.prompt.messages"
VERCEL_RESPONSE_TEXT: Final = "ai.response.text"
VERCEL_RESPONSE_TOOL_CALLS: Final = "ai.response.toolCalls"
VERCEL_RESPONSE_FINISH_REASON: Final = "ai.response.finishReason"
VERCEL_RESPONSE_MODEL: Final = "ai.response.model"
VERCEL_MODEL_ID: Final = "ai.model.id"
VERCEL_USAGE_INPUT_TOKENS: Final = "ai.usage.inputTokens"
VERCEL_USAGE_OUTPUT_TOKENS: Final = "ai.usage.outputTokens"
VERCEL_USAGE_PROMPT_TOKENS: Final = "ai.usage.promptTokens"  # before ai 5
VERCEL_USAGE_COMPLETION_TOKENS: Final = "ai.usage.completionTokens"  # before ai 5
# The operations that run the SDK's tool loop (agents), and the suffixes of its model calls.
VERCEL_LOOPS: Final = frozenset({"ai.generateText", "ai.streamText"})
VERCEL_MODEL_CALL_SUFFIXES: Final = (".doGenerate", ".doStream", ".doEmbed")
# MLflow Tracing (its native OTLP export): each attribute value is JSON text (the span type too).
MLFLOW_SPAN_TYPE: Final = "mlflow.spanType"
MLFLOW_SPAN_INPUTS: Final = "mlflow.spanInputs"
MLFLOW_SPAN_OUTPUTS: Final = "mlflow.spanOutputs"
MLFLOW_LLM_MODEL: Final = "mlflow.llm.model"
MLFLOW_TOKEN_USAGE: Final = "mlflow.chat.tokenUsage"
# Logfire: spans named by a message template; the OpenAI Agents integration's templates and attributes.
LOGFIRE_MSG_TEMPLATE: Final = "logfire.msg_template"
LOGFIRE_TOOL_TEMPLATE: Final = "Function: {name}"
LOGFIRE_AGENT_TEMPLATE: Final = "Agent run: {name!r}"
LOGFIRE_MODEL_TEMPLATES: Final = frozenset(
    {"Chat completion with {gen_ai.request.model!r}", "Responses API with {gen_ai.request.model!r}"}
)
LOGFIRE_NAME: Final = "name"
LOGFIRE_INPUT: Final = "input"
LOGFIRE_OUTPUT: Final = "output"
LOGFIRE_ERROR: Final = "error"
LOGFIRE_RESPONSE: Final = "response"  # the Responses API's response object
# DSPy (via OpenInference): a tool span is named after the method that ran the tool.
DSPY_TOOL_SUFFIXES: Final = (".__call__", ".acall")
# DSPy's ReAct asks for a tool in the model's text, as the ChatAdapter's ``[[ ## <field> ## ]]`` fields.
DSPY_NEXT_TOOL_NAME: Final = "next_tool_name"
DSPY_NEXT_TOOL_ARGS: Final = "next_tool_args"
# BeeAI Framework via OpenInference (openinference-instrumentation-beeai): an emitter event of a run (a tool's
# ``error``) recorded as a child span of the run's span, of its kind, with the event's path and its trace's
# run id; a run's input recorded as ``{"input": ..., "options": ...}``.
BEEAI_EVENT_PATH: Final = "metadata.path"
BEEAI_EVENT_RUN_ID: Final = "metadata.trace.run_id"
BEEAI_RUN_INPUT: Final = "input"
BEEAI_RUN_OPTIONS: Final = "options"
# Langfuse's OpenTelemetry-based SDK: what an observation is, and its content (JSON text).
LANGFUSE_OBSERVATION_TYPE: Final = "langfuse.observation.type"
LANGFUSE_INPUT: Final = "langfuse.observation.input"
LANGFUSE_OUTPUT: Final = "langfuse.observation.output"
LANGFUSE_MODEL_NAME: Final = "langfuse.observation.model.name"
LANGFUSE_USAGE_DETAILS: Final = "langfuse.observation.usage_details"
LANGFUSE_STATUS_MESSAGE: Final = "langfuse.observation.status_message"
# Genkit (its built-in tracing; the Go SDK checked): every span of an action says its type, its action's
# kind (the subtype) and name, and its input and output as JSON text.
GENKIT_TYPE: Final = "genkit:type"
GENKIT_SUBTYPE: Final = "genkit:metadata:subtype"
GENKIT_NAME: Final = "genkit:name"
GENKIT_INPUT: Final = "genkit:input"
GENKIT_OUTPUT: Final = "genkit:output"
# The subtypes of a tool action (``tool.v2`` records its output as ``{"output": ..., "content": [...]}``),
# of a model call (and an embedder), a retriever and a flow; ``generate`` (type ``util``) runs the model
# and tool loop; a flow's ``Run`` step is of type ``flowStep``.
GENKIT_TOOL: Final = "tool"
GENKIT_TOOL_V2: Final = "tool.v2"
GENKIT_MODEL_SUBTYPES: Final = frozenset({"model", "background-model", "embedder"})
GENKIT_RETRIEVER: Final = "retriever"
GENKIT_FLOW: Final = "flow"
GENKIT_FLOW_STEP: Final = "flowStep"
GENKIT_UTIL: Final = "util"
GENKIT_GENERATE: Final = "generate"
# Spring AI (Micrometer Observations bridged to OpenTelemetry): what a span is (``spring.ai.kind``), a tool
# call's definition and content (content with ``spring.ai.tools.observations.include-content``), and the
# tools a model call offered (on its GenAI ``chat`` span, which records no messages).
SPRING_AI_KIND: Final = "spring.ai.kind"
SPRING_AI_KIND_TOOL_CALL: Final = "tool_call"
SPRING_AI_KIND_CHAT_CLIENT: Final = "chat_client"
SPRING_AI_TOOL_NAME: Final = "spring.ai.tool.definition.name"
SPRING_AI_TOOL_CALL_ID: Final = "spring.ai.tool.call.id"
SPRING_AI_TOOL_CALL_ARGUMENTS: Final = "spring.ai.tool.call.arguments"
SPRING_AI_TOOL_CALL_RESULT: Final = "spring.ai.tool.call.result"
SPRING_AI_MODEL_TOOL_NAMES: Final = "spring.ai.model.request.tool.names"
# The finish reason (lower-cased) of a Spring AI model call that stopped to call tools.
SPRING_AI_FINISH_TOOL_CALLS: Final = "tool_calls"
