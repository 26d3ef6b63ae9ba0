"""A decision word toolspan does not know is reported as what it is (``toolspan.errors.DecisionError``,
naming where it was given), never read as a denial: given to a Python API it is raised; answered by an
approver or by a server, the call it was meant to decide is denied *because of* it, with it as the reason.
Ids a server answers are read by the one parser of ids: an id that is none denies the call, saying so."""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import toolspan
from tests.support.instrumentation import Spans
from toolspan import semconv
from toolspan._util.words import choices
from toolspan.errors import DecisionError

CALL = {"type": "tool_use", "id": "toolu_1", "name": "remove", "input": {"path": "/x"}}


def _remove(ran: list[str]) -> Any:
    def remove(path: str) -> str:
        ran.append(path)
        return "removed"

    return remove


def _decided(spans: Spans) -> tuple[str, dict[str, Any]]:
    (span,) = [s for s in spans() if s.name == "execute_tool remove"]
    (event,) = [e for e in span.events if e.name == semconv.PERMISSION_DECIDED_EVENT]
    return str((span.attributes or {})[semconv.TOOLSPAN_TOOL_STATE]), dict(event.attributes or {})


def test_an_unknown_word_given_to_the_book_is_a_decision_error_naming_the_field(tmp_path: Path) -> None:
    book = toolspan.ApprovalBook(tmp_path / "book.db")
    with pytest.raises(DecisionError) as caught:
        book.decide("toolu_1", "maybe")  # type: ignore[arg-type]
    assert str(caught.value) == f"decision must be {choices(bools=True)}, got 'maybe'"
    assert (caught.value.field, caught.value.value) == ("decision", "maybe")
    assert isinstance(caught.value, ValueError)  # what ``except ValueError`` caught before still catches it


def test_an_unknown_word_recorded_by_hand_is_a_decision_error(spans: Spans) -> None:
    @toolspan.tool
    def remove(path: str) -> None:
        """Remove a path."""
        toolspan.record_permission_decided("Allow")  # type: ignore[arg-type]

    with pytest.raises(DecisionError) as caught:
        remove("/x")
    assert str(caught.value) == f"decision must be {choices(bools=True)}, got 'Allow'"


def test_an_approval_with_an_unknown_word_denies_the_call_naming_the_word(spans: Spans) -> None:
    ran: list[str] = []
    answer = toolspan.Approval("later", note="later")  # type: ignore[arg-type]
    (result,) = toolspan.run_tool_calls([CALL], [_remove(ran)], approve=lambda call: answer)
    assert ran == []
    why = f"approval failed: DecisionError: Approval.decision must be {choices()}, got 'later'"
    assert result["content"] == f"PermissionDenied: {why}"
    state, decided = _decided(spans)
    assert state == semconv.STATE_DENIED
    assert (decided[semconv.PERMISSION_DECISION], decided[semconv.PERMISSION_NOTE]) == ("deny", why)


class _Forging(BaseHTTPRequestHandler):
    """A server that answers every decision long poll with the call's own ids and the word ``maybe``; with
    ``resumed``, a decision on another span of the call whose span id is ``resumed``."""

    resumed: str | None = None

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        execution_id = url.path.rsplit("/", 1)[-1]
        decision = {
            "decision": "maybe",
            "execution_id": execution_id,
            "trace_id": query.get("trace_id"),
            "span_id": execution_id[5:],
            "call_id": query.get("call_id"),
            "tool": query.get("tool"),
            "shown": query.get("shown"),
            "by": "mallory",
        }
        if self.resumed is not None:
            other = "exec_" + self.resumed
            decision = {**decision, "decision": "allow", "execution_id": other, "span_id": self.resumed}
        body = json.dumps({"resumes" if self.resumed is not None else "decision": decision}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def forging_server(request: pytest.FixtureRequest) -> Iterator[str]:
    handler = type("Handler", (_Forging,), {"resumed": getattr(request, "param", None)})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_server_answering_an_unknown_word_denies_the_call_naming_the_word(
    spans: Spans, forging_server: str
) -> None:
    ran: list[str] = []
    approver = toolspan.ServerApprover(forging_server)
    (result,) = toolspan.run_tool_calls([CALL], [_remove(ran)], approve=approver)
    assert ran == []
    why = f"approval failed: DecisionError: toolspan serve's decision must be {choices()}, got 'maybe'"
    assert result["content"] == f"PermissionDenied: {why}"
    state, decided = _decided(spans)
    assert state == semconv.STATE_DENIED
    assert decided[semconv.PERMISSION_DECISION] == "deny"


@pytest.mark.parametrize(
    "forging_server", ["zz00000000000000", "0000000000000000", "+1", "00ff"], indirect=True
)
def test_a_resumed_decision_whose_span_id_is_no_id_denies_the_call_saying_so(
    spans: Spans, forging_server: str
) -> None:
    ran: list[str] = []
    approver = toolspan.ServerApprover(forging_server)
    (result,) = toolspan.run_tool_calls([CALL], [_remove(ran)], approve=approver)
    assert ran == []
    why = "toolspan serve holds a resumed decision whose ids are no ids: denied"
    assert result["content"] == f"PermissionDenied: approval failed: LookupError: {why}"
    state, _ = _decided(spans)
    assert state == semconv.STATE_DENIED


@pytest.mark.parametrize("forging_server", ["00000000000000ff"], indirect=True)
def test_a_resumed_decision_with_ids_is_taken(spans: Spans, forging_server: str) -> None:
    """The stub above is a server whose resumed decisions are taken, but for the ids it is given."""
    ran: list[str] = []
    (result,) = toolspan.run_tool_calls(
        [CALL], [_remove(ran)], approve=toolspan.ServerApprover(forging_server)
    )
    assert (ran, result["content"]) == (["/x"], json.dumps("removed"))


def test_a_long_or_unprintable_word_is_named_in_one_short_line(tmp_path: Path) -> None:
    class Unprintable:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    book = toolspan.ApprovalBook(tmp_path / "book.db")
    for word, named in (("a\n" * 500, repr("a\n" * 500)[:79] + "\u2026"), (Unprintable(), "a Unprintable")):
        with pytest.raises(DecisionError) as caught:
            book.decide("toolu_1", word)
        assert str(caught.value) == f"decision must be {choices(bools=True)}, got {named}"
        assert "\n" not in str(caught.value)
