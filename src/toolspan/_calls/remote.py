"""An approver that waits for the decision made through ``toolspan serve`` (its control channel), and
delivers the cancel requests made there to the calls it approved.

    approver = toolspan.ServerApprover("http://127.0.0.1:4318", token=os.environ["TOOLSPAN_SERVER_TOKEN"])
    results = toolspan.run_tool_calls(message.tool_calls, tools, approve=approver)

The application exports its spans to that server with pending records (``TOOLSPAN_PENDING_SPANS=true``), so
the server lists each gated call in its inbox (``GET /api/control/waiting``) while it waits. The approver
long-polls ``GET /api/control/decisions/{call_id}`` (the server answers the moment a decision is stored;
no polling interval), by the model's tool call id: an application killed while a call waited and started
again re-issues the same call, finds the decision made meanwhile (or waits for it), and its new tool span
links back to the first span that waited (``toolspan.link.type`` = ``resumes_approval``), the latency
counted from that first wait. A decision made for another tool under the same id is refused (denied), and so
is one made on a span with other arguments (as the two spans recorded them: their JSON text, and their
digest where that text may be cut or redacted; with content capture off nothing can be compared, so a
re-issued call is denied), as ``ApprovalBook`` gives a decision only to the same arguments.

While the server cannot be reached (restarting, say) the approver reconnects, for at most ``unreachable_for``
seconds in a row; after that the call is denied (fail closed). ``run_tool_calls(approve_timeout=...)``
bounds the whole wait (then denied, ``by="timeout"``). While an approved call runs, a watcher thread
long-polls ``GET /api/control/cancels`` for it and delivers a cancel request (see ``_decisions.cancel``).
Standard library only (``urllib``).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any, Final

from toolspan._calls.shapes import ToolCall
from toolspan._decisions.approvals import Approval, abandoned
from toolspan._decisions.cancel import Supervision
from toolspan._instrument import hooks as _hooks
from toolspan._instrument import permissions as _permissions

__all__ = ["ServerApprover"]

_logger = logging.getLogger(__name__)
_WAIT_S: Final = 10.0  # one long-poll round (the server holds it at most 30 s)
_CANCEL_WAIT_S: Final = 1.0  # one round of the cancel watcher (a call started meanwhile joins the next)
_BACKOFF_S: Final = (0.05, 0.1, 0.2, 0.5, 1.0)


class _Unreachable(Exception):
    """The server did not answer (refused, reset, timed out, or a 5xx while it restarts)."""


class ServerApprover:
    """Approve each tool call through ``toolspan serve`` at ``url`` (see the module doc); usable wherever
    ``approve=`` is accepted. ``token``: the server's bearer token (``None`` when it has none: reads are
    open then). ``unreachable_for``: seconds the server may stay unreachable before the call is denied."""

    def __init__(self, url: str, *, token: str | None = None, unreachable_for: float = 30.0) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"ServerApprover needs the server's http(s) URL, got {url!r:.80}")
        if (
            isinstance(unreachable_for, bool)
            or not isinstance(unreachable_for, (int, float))
            or not 0 < unreachable_for <= 86400
        ):
            raise ValueError(f"unreachable_for must be a positive number of seconds, got {unreachable_for!r}")
        self.url = url.rstrip("/")
        self.unreachable_for = float(unreachable_for)
        self._token = token
        self._lock = threading.Lock()
        self._running: dict[str, Supervision] = {}
        self._watcher: threading.Thread | None = None
        self._warned = False  # about a call nothing exports (``_check_exported``)

    def __repr__(self) -> str:  # never shows the token
        return f"ServerApprover({self.url!r})"

    # --- HTTP ---------------------------------------------------------------------------------------

    def _get(self, path: str, timeout: float) -> Any:
        headers = {"Accept": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        request = urllib.request.Request(self.url + path, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as e:
            detail = e.read()[:300].decode("utf-8", "replace")
            if e.code >= 500:
                raise _Unreachable(f"{e.code} {detail}") from None
            raise PermissionError(f"toolspan serve refused {path}: {e.code} {detail}") from None
        except (OSError, http.client.HTTPException, ValueError) as e:
            raise _Unreachable(str(e) or type(e).__name__) from None

    # --- the approver -------------------------------------------------------------------------------

    def __call__(self, call: ToolCall) -> Approval:
        """Wait for the server's decision on ``call`` (by the model's tool call id)."""
        if not call.id:
            raise ValueError(
                f"ServerApprover needs the model's tool call id; the call of {call.name!r} has none"
            )
        self._check_exported(call)
        path = f"/api/control/decisions/{urllib.parse.quote(call.id, safe='')}?wait={_WAIT_S:g}"
        down_since: float | None = None
        failures = 0
        while True:
            if abandoned():  # approve_timeout: the call went on without us
                raise TimeoutError(f"tool call {call.id!r} stopped waiting for its approval")
            try:
                doc = self._get(path, _WAIT_S + 10)
            except _Unreachable as e:
                now = time.monotonic()
                down_since = now if down_since is None else down_since
                if now - down_since >= self.unreachable_for:
                    raise ConnectionError(
                        f"toolspan serve at {self.url} could not be reached for {self.unreachable_for:g} s"
                        f" ({e}): the call is denied"
                    ) from None
                _logger.info("toolspan: toolspan serve not reachable (%s); reconnecting", e)
                time.sleep(_BACKOFF_S[min(failures, len(_BACKOFF_S) - 1)])
                failures += 1
                continue
            down_since, failures = None, 0
            decision = doc.get("decision") if isinstance(doc, dict) else None
            if decision is not None:
                return self._approval(call, decision, doc.get("waiting"), doc.get("decided_on"))

    def _check_exported(self, call: ToolCall) -> None:
        """Warn (once per approver) when nothing exports a pending record of the waiting call: the server
        then never lists it, no one can decide it, and it waits out its timeout in silence."""
        span = _permissions.tool_span()
        if self._warned or not span.get_span_context().is_valid or _hooks.followed(span):
            return
        self._warned = True
        _logger.warning(
            "toolspan: ServerApprover: nothing exports a pending record of tool call %r (%s): toolspan serve"
            " at %s cannot list it in its inbox, so no one can decide it, and it waits until its timeout."
            " Export pending records to that server: TOOLSPAN_PENDING_SPANS=true with configure() and"
            " OTEL_EXPORTER_OTLP_ENDPOINT=%s, or add a PendingSpanProcessor",
            call.id,
            call.name,
            self.url,
            self.url,
        )

    def _approval(self, call: ToolCall, decision: dict[str, Any], waiting: Any, decided_on: Any) -> Approval:
        tool = decision.get("tool")
        if tool is not None and tool != call.name:
            raise LookupError(
                f"toolspan serve holds a decision on tool call {call.id!r} for tool {tool!r}, not"
                f" {call.name!r}: a decision is never given to another call"
            )
        ctx = _permissions.tool_span().get_span_context()
        if not ctx.is_valid or decision.get("span_id") != f"{ctx.span_id:016x}":
            # Decided on another span of this call id (the call re-issued after a restart): given only to
            # the same arguments, as the decided span recorded them (its JSON text, and its digest where
            # that text may be cut or redacted).
            mine = _permissions.recorded_arguments()
            theirs = (
                _permissions.recorded_arguments(decided_on.get("attributes"))
                if isinstance(decided_on, dict)
                else (None, None)
            )
            why = None
            if (None, None) in (mine, theirs):
                why = "arguments it cannot compare (content capture off, or the decided span unknown)"
            elif mine != theirs:
                why = "other arguments"
            if why is not None:
                raise LookupError(
                    f"toolspan serve holds a decision on tool call {call.id!r} made on {why}: a decision is"
                    " never given to another call"
                )
        required_ns = None
        if isinstance(waiting, dict) and waiting.get("span_id"):
            ctx = _permissions.tool_span().get_span_context()
            here = (f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}") if ctx.is_valid else (None, None)
            there = (str(waiting.get("trace_id")), str(waiting["span_id"]))
            if there != here:  # this call waited before, in another span (a restart): link back to it
                _permissions.link_waiting_span(int(there[0], 16), int(there[1], 16))
            required = waiting.get("required_ns")
            required_ns = required if isinstance(required, int) else None
        arguments = decision.get("arguments")
        return Approval(
            str(decision.get("decision")),
            note=decision.get("note"),
            by=decision.get("by"),
            arguments=arguments if isinstance(arguments, dict) else None,
            required_ns=required_ns,
        )

    # --- cancel requests ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def supervise(self, execution_id: str) -> Iterator[Supervision]:
        """While an approved call runs: deliver the cancel requests made for it (``_decisions.cancel``)."""
        supervision = Supervision(execution_id)
        with self._lock:
            self._running[execution_id] = supervision
            if self._watcher is None:
                self._watcher = threading.Thread(
                    target=self._watch, name="toolspan-cancel-watch", daemon=True
                )
                self._watcher.start()
        try:
            yield supervision
        finally:
            with self._lock:
                self._running.pop(execution_id, None)

    def _watch(self) -> None:
        failures = 0
        while True:
            with self._lock:
                if not self._running:
                    self._watcher = None
                    return
                # A call cancelled already is not asked about again (its body may take a while to stop).
                ids = [i for i, s in self._running.items() if not s.requested]
            if not ids:
                time.sleep(0.05)
                continue
            query = urllib.parse.urlencode(
                [("execution_id", i) for i in ids] + [("wait", f"{_CANCEL_WAIT_S:g}")]
            )
            try:
                doc = self._get(f"/api/control/cancels?{query}", _CANCEL_WAIT_S + 10)
                failures = 0
            except Exception as e:  # the watcher never dies of an error: it retries
                _logger.debug("toolspan: cancel watch failed: %s", e)
                time.sleep(_BACKOFF_S[min(failures, len(_BACKOFF_S) - 1)])
                failures += 1
                continue
            for row in doc.get("cancels", []) if isinstance(doc, dict) else []:
                with self._lock:
                    supervision = self._running.get(str(row.get("execution_id")))
                if supervision is not None:
                    by, note = row.get("by"), row.get("note")
                    supervision.request(None if by is None else str(by), None if note is None else str(note))
