"""An approver that waits for the decision made through ``toolspan serve`` (its control channel), and
delivers the cancel requests made there to the calls it approved.

    approver = toolspan.ServerApprover("http://127.0.0.1:4318", token=os.environ["TOOLSPAN_SERVER_TOKEN"])
    results = toolspan.run_tool_calls(message.tool_calls, tools, approve=approver)

The application exports its spans to that server with pending records (``TOOLSPAN_PENDING_SPANS=true``), so
the server lists each gated call in its inbox (``GET /api/control/waiting``) while it waits. The approver
long-polls ``GET /api/control/decisions/{execution_id}`` (the server answers the moment a decision is stored:
no polling interval) for its own call: the span that waits, named by its execution id and trace id. A
decision is taken only when it names exactly that call and the arguments it recorded: the decision's
``shown`` digest must be the ``arguments_sha256`` of the arguments' JSON text the span recorded (what the
decider was shown), and its tool the call's; anything else denies the call. The token is the application's
(``--token``): it reads, and may never decide.

An application killed while a call waited and started again re-issues the same call (same model call id,
tool and arguments) in a new span: a decision made on the first span, which its dead application could not
apply, is taken by the re-issued call (the server offers it as ``resumes`` only once that application stopped
asking), and the new tool span links back to the span that waited (``toolspan.link.type`` =
``resumes_approval``), the latency counted from that first wait.

While the server cannot be reached (restarting, say) the approver reconnects, for at most ``unreachable_for``
seconds in a row; after that the call is denied (fail closed). ``run_tool_calls(approve_timeout=...)``
bounds the whole wait (then denied, ``by="timeout"``). While an approved call runs, a watcher thread
long-polls ``GET /api/control/cancels`` for it and delivers a cancel request (see ``_approvals.cancel``).
Redirects are never followed: the token goes to the server's own URL only. Standard library only
(``urllib``).
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

from toolspan._approvals.approval import Approval, ToolCall
from toolspan._approvals.asking import abandoned
from toolspan._approvals.cancel import Supervision
from toolspan._instrument import hooks as _hooks
from toolspan._instrument import permissions as _permissions
from toolspan._util.http import OPENER as _OPENER
from toolspan._util.ids import arguments_sha256, execution_id, parse_span_id, parse_trace_id
from toolspan._util.words import parse_decision
from toolspan.errors import ToolspanError

__all__ = ["ServerApprover"]

_logger = logging.getLogger(__name__)
_WAIT_S: Final = 10.0  # one long-poll round (the server holds it at most 30 s)
_CANCEL_WAIT_S: Final = 1.0  # one round of the cancel watcher (a call started meanwhile joins the next)
_BACKOFF_S: Final = (0.05, 0.1, 0.2, 0.5, 1.0)
# A model call id longer than this (quoted) is not sent: such a call cannot take a decision made before a
# restart (its own span's decision still reaches it).
_MAX_QUOTED_ID: Final = 4096


class _Unreachable(ToolspanError):
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
        self._running: dict[str, tuple[str | None, Supervision]] = {}
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
            with _OPENER.open(request, timeout=timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as e:
            detail = e.read()[:300].decode("utf-8", "replace")
            if 300 <= e.code < 400:
                raise PermissionError(
                    f"toolspan serve answered {path} with a redirect ({e.code}) to"
                    f" {str(e.headers.get('location'))[:120]!r}: not followed (the token goes to"
                    f" {self.url} only)"
                ) from None
            if e.code >= 500:
                raise _Unreachable(f"{e.code} {detail}") from None
            raise PermissionError(f"toolspan serve refused {path}: {e.code} {detail}") from None
        except (OSError, http.client.HTTPException, ValueError) as e:
            raise _Unreachable(str(e) or type(e).__name__) from None

    # --- the approver -------------------------------------------------------------------------------

    def __call__(self, call: ToolCall) -> Approval:
        """Wait for the server's decision on ``call``: on the span that runs it, named by its execution id."""
        ctx = _permissions.tool_span().get_span_context()
        if not ctx.is_valid:
            raise LookupError(
                f"the call of {call.name!r} has no recording tool span: the server cannot show it, so no"
                " decision can name it"
            )
        self._check_exported(call)
        own = execution_id(ctx.span_id)
        trace_id = f"{ctx.trace_id:032x}"
        shown = arguments_sha256(_permissions.recorded_arguments()[0])
        query = [("trace_id", trace_id), ("wait", f"{_WAIT_S:g}")]
        if call.id and len(urllib.parse.quote(call.id, safe="")) <= _MAX_QUOTED_ID:
            query += [("call_id", call.id), ("tool", call.name), ("shown", shown)]
        path = f"/api/control/decisions/{own}?{urllib.parse.urlencode(query)}"
        down_since: float | None = None
        failures = 0
        while True:
            if abandoned():  # approve_timeout: the call went on without us
                raise TimeoutError(f"tool call {own} stopped waiting for its approval")
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
            if not isinstance(doc, dict):
                continue
            decision = doc.get("decision")
            if isinstance(decision, dict):
                return self._approval(call, decision, (trace_id, own), shown, resumed=False)
            resumes = doc.get("resumes")
            if isinstance(resumes, dict):
                return self._approval(call, resumes, (trace_id, own), shown, resumed=True)

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

    def _approval(
        self, call: ToolCall, decision: dict[str, Any], own: tuple[str, str], shown: str, *, resumed: bool
    ) -> Approval:
        """The decision as an ``Approval``, once it names this very call (else ``LookupError``: denied)."""
        where = (decision.get("trace_id"), decision.get("execution_id"))
        why = None
        if decision.get("tool") != call.name:
            why = f"for tool {str(decision.get('tool'))[:80]!r}, not {call.name!r}"
        elif decision.get("shown") != shown:
            why = "on other arguments than this call recorded"
        elif not resumed and where != own:
            why = f"on another call ({where[1]} of trace {where[0]})"
        elif resumed and (where == own or decision.get("call_id") != call.id):
            why = "on a call that is not this one re-issued"
        if why is not None:
            raise LookupError(
                f"toolspan serve holds a decision made {why}: a decision is never given to another call"
            )
        required_ns = None
        if resumed:  # this call waited before, in another span (a restart): link back to it
            trace_hex, span_hex = parse_trace_id(str(where[0])), parse_span_id(str(decision.get("span_id")))
            if trace_hex is None or span_hex is None or not (int(trace_hex, 16) and int(span_hex, 16)):
                raise LookupError("toolspan serve holds a resumed decision whose ids are no ids: denied")
            _permissions.link_waiting_span(int(trace_hex, 16), int(span_hex, 16))
            since = decision.get("waiting_since_ns")
            required_ns = since if isinstance(since, int) and not isinstance(since, bool) else None
        arguments = decision.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise LookupError("toolspan serve holds an edit of the arguments that is not an object: denied")
        return Approval(
            # A word toolspan does not know is a DecisionError (the call is denied, saying so).
            parse_decision(decision.get("decision"), "toolspan serve's decision"),
            note=decision.get("note"),
            by=decision.get("by"),
            arguments=arguments,
            required_ns=required_ns,
        )

    # --- cancel requests ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def supervise(self, execution_id: str) -> Iterator[Supervision]:
        """While an approved call runs: deliver the cancel requests made for it (``cancel``)."""
        supervision = Supervision(execution_id)
        ctx = _permissions.tool_span().get_span_context()
        trace_id = f"{ctx.trace_id:032x}" if ctx.is_valid else None
        with self._lock:
            self._running[execution_id] = (trace_id, supervision)
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
                ids = [i for i, (_, s) in self._running.items() if not s.requested]
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
                    running = self._running.get(str(row.get("execution_id")))
                # A request for this very call only: the same span id in another trace is not it.
                if running is not None and running[0] in (None, row.get("trace_id")):
                    supervision = running[1]
                    by, note = row.get("by"), row.get("note")
                    supervision.request(None if by is None else str(by), None if note is None else str(note))
