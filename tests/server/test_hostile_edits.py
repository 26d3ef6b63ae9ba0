"""A decider's edit checked against a parameter schema a hostile span recorded, through ``toolspan serve``'s
ASGI application in this process (``POST /api/control/decisions`` with a decider token): the schema comes
from whoever sent the span, so its check never fetches anything (a reference that does not resolve inside
the schema refuses the edit, 422 naming it, and a server it names is never asked) and its work is bounded
(a schema whose references branch out is refused, 422, and no thread is left checking it). Table tests pin
the examples found probing it; property tests (hypothesis) cover each class."""

from __future__ import annotations

import http.server
import itertools
import json
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.server.test_control_hostile import waiting_span
from tests.support.asgi import AsgiAnswer, AsgiClient
from toolspan import semconv
from toolspan._util.ids import arguments_sha256
from toolspan.bridge.readers import spans_from_document
from toolspan.server import ServerConfig, build_app, open_store

DECIDER = "decider-token-a"
ARGUMENTS = '{"amount": 1}'
PROBES = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# What any one edit may take to be answered, however hostile its schema (it takes well under a second).
ANSWER_WITHIN_S = 60.0


class Remote:
    """A web server on this machine that counts what it is asked and answers ``{}`` (a schema that lets
    anything through) to every request."""

    def __init__(self) -> None:
        hits: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "application/schema+json")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self.hits = hits
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class Served:
    """The application over a store, and a fresh waiting ``transfer`` call for each edit."""

    def __init__(self, tmp: Path) -> None:
        self.store = open_store(str(tmp / "store.db"))
        config = ServerConfig(db=self.store.path, parse_workers=0, deciders=(("alice", DECIDER),))
        app, _ = build_app(config, self.store)
        self.client = AsgiClient(app)
        self.ids = itertools.count(1)

    def edit(self, schema: Any, arguments: dict[str, Any], schema_key: str | None = None) -> AsgiAnswer:
        """A call recording ``schema`` (a value, or JSON text as is) waits; alice allows it with
        ``arguments``."""
        n = next(self.ids)
        span = waiting_span(f"{n:032x}", f"{n:016x}", call_id=f"toolu_{n}", arguments=ARGUMENTS)
        text = schema if isinstance(schema, str) else json.dumps(schema)
        key = schema_key or semconv.TOOLSPAN_TOOL_PARAMETERS
        span["attributes"].append({"key": key, "value": {"stringValue": text}})
        doc = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [span]}]}]}
        self.store.ingest(spans_from_document(doc))
        body = {
            "execution_id": f"exec_{n:016x}",
            "trace_id": f"{n:032x}",
            "decision": "allow",
            "shown": arguments_sha256(ARGUMENTS),
            "arguments": arguments,
        }
        return self.client.request(
            "POST",
            "/api/control/decisions",
            json.dumps(body).encode(),
            {"Authorization": f"Bearer {DECIDER}", "Content-Type": "application/json"},
            within=ANSWER_WITHIN_S,
        )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    found = Served(tmp_path_factory.mktemp("edits"))
    try:
        with found.client:
            yield found
    finally:
        found.store.close()


@pytest.fixture(scope="module")
def remote() -> Iterator[Remote]:
    server = Remote()
    try:
        yield server
    finally:
        server.close()


def _object(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def _refused(answer: AsgiAnswer, *named: str) -> str:
    """The answer is a 422 (the edit refused, nothing stored) whose reason names each of ``named``."""
    assert answer.status == 422, (answer.status, answer.body[:300])
    reason = str(answer.json()["error"])
    for name in named:
        assert name in reason, reason
    return reason


def _checking_threads() -> list[str]:
    """The threads running an edit's check now."""
    return [
        str(ident)
        for ident, frame in sys._current_frames().items()
        if any(f.f_code.co_name == "edit_problem" for f in _stack(frame))
    ]


def _stack(frame: Any) -> Iterator[Any]:
    while frame is not None:
        yield frame
        frame = frame.f_back


# --- references: nothing is fetched --------------------------------------------------------------------


def test_a_dynamic_ref_to_a_local_file_is_refused_naming_it_and_the_file_stays_unread(served: Served) -> None:
    # A short path: the reason names a reference by its first 80 characters (pytest's own can be longer).
    with tempfile.TemporaryDirectory(prefix="ts") as short:
        secret = Path(short) / "secret.json"
        secret.write_text('{"type": "integer", "title": "the-secret-title"}')
        ref = secret.as_uri()
        answer = served.edit(_object(amount={"$dynamicRef": ref}), {"amount": "lots"})
        reason = _refused(answer, ref, "refers outside itself")
    # Nothing of the file comes back: neither its content nor what it says of the field.
    assert "the-secret-title" not in reason
    assert "integer" not in reason


@pytest.mark.parametrize(
    ("dialect", "keyword"),
    [
        ("https://json-schema.org/draft/2020-12/schema", "$dynamicRef"),
        ("https://json-schema.org/draft/2020-12/schema", "$ref"),
        ("https://json-schema.org/draft/2019-09/schema", "$ref"),
        ("http://json-schema.org/draft-07/schema#", "$ref"),
    ],
)
def test_a_reference_to_a_web_server_is_refused_and_the_server_never_asked(
    served: Served, remote: Remote, dialect: str, keyword: str
) -> None:
    """Before, the remote ``{}`` of a ``$dynamicRef`` let a wrong-typed edit through."""
    ref = f"{remote.url}/amount.json"
    before = len(remote.hits)
    schema = {"$schema": dialect, **_object(amount={keyword: ref}), "required": ["amount"]}
    _refused(served.edit(schema, {"amount": "not a number"}), ref)
    assert remote.hits[before:] == []


def test_references_resolve_inside_the_schema_by_its_ids(served: Served, remote: Remote) -> None:
    """``$id``-relative references to the schema's own resources and anchors are followed (the edit judged by
    them); one to a resource the schema does not hold is refused, naming it, never fetched."""
    schema = {
        "$id": f"{remote.url}/tools/transfer.json",
        "$defs": {
            "amount": {"$id": "amount.json", "type": "integer"},
            "note": {"$anchor": "note", "type": "string"},
        },
        **_object(amount={"$ref": "amount.json"}, note={"$ref": "#note"}),
    }
    answer = served.edit(schema, {"amount": "ten"})
    _refused(answer, "'arguments.amount'", "is not of type 'integer'")
    assert served.edit(schema, {"amount": 10, "note": "rent"}).status == 200
    schema["properties"]["currency"] = {"$ref": "currency.json"}
    _refused(served.edit(schema, {"amount": 10}), "'currency.json'", "refers outside itself")
    assert remote.hits == []


@pytest.mark.parametrize(
    ("schema", "named"),
    [
        ({"$ref": "#/$defs/missing"}, "'#/$defs/missing', which is not in it"),
        ({"$schema": "https://schemas.example/mine"}, "'https://schemas.example/mine'"),
        ({"$schema": 7}, "$schema is not a string"),
        ({"$ref": "https://json-schema.org/draft/2020-12/schema"}, "refers outside itself"),
        ({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}, "refers to itself without end"),
    ],
)
def test_a_schema_whose_references_cannot_be_followed_refuses_the_edit_naming_why(
    served: Served, schema: dict[str, Any], named: str
) -> None:
    reason = _refused(served.edit(schema, {"amount": 1}))
    assert named in reason
    assert "an edit cannot be checked" in reason


_TARGETS = st.sampled_from(
    [
        "{remote}/schema.json",
        "{remote}/schema.json#/$defs/x",
        "{file}",
        "other.json",
        "../up.json#frag",
        "urn:example:amount",
        "#/$defs/nowhere",
        "#no-such-anchor",
    ]
)
_KEYWORDS = st.sampled_from(["$ref", "$dynamicRef"])


def _placed(where: str, reference: dict[str, Any]) -> dict[str, Any]:
    """A schema holding ``reference`` in one position validation reaches for ``{"amount": [1]}``."""
    shapes: dict[str, dict[str, Any]] = {
        "property": _object(amount=reference),
        "items": _object(amount={"type": "array", "items": reference}),
        "allOf": {"allOf": [{"type": "object"}, reference]},
        "defs": {"$defs": {"hidden": reference}, **_object(amount={"$ref": "#/$defs/hidden"})},
        "not": _object(amount={"not": {"not": reference}}),
        "if": _object(amount={"if": {"type": "array"}, "then": reference}),
    }
    return shapes[where]


@PROBES
@given(
    keyword=_KEYWORDS,
    target=_TARGETS,
    where=st.sampled_from(["property", "items", "allOf", "defs", "not", "if"]),
)
def test_any_reference_out_of_the_schema_is_a_422_naming_it_and_nothing_is_fetched(
    served: Served, remote: Remote, tmp_path: Path, keyword: str, target: str, where: str
) -> None:
    secret = tmp_path / "s.json"
    secret.write_text("{}")
    ref = target.format(remote=remote.url, file=secret.as_uri())
    before = len(remote.hits)
    _refused(served.edit(_placed(where, {keyword: ref}), {"amount": [1]}), repr(ref[:80]))
    assert remote.hits[before:] == []


# --- bounded work ----------------------------------------------------------------------------------------


def _branching(levels: int, fan_out: int = 2, combinator: str = "allOf", leaf: str = "integer") -> Any:
    """``levels`` ``$defs`` each ``combinator`` ``fan_out`` refs to the next: ``fan_out ** levels`` checks."""
    defs: dict[str, Any] = {
        f"d{i}": {combinator: [{"$ref": f"#/$defs/d{i + 1}"}] * fan_out} for i in range(levels)
    }
    defs[f"d{levels}"] = {"type": leaf}
    return {"$defs": defs, **_object(amount={"$ref": "#/$defs/d0"})}


def test_the_issue_s_schema_of_forty_levels_is_refused_and_no_thread_keeps_checking(served: Served) -> None:
    schema = json.dumps(_branching(40), separators=(",", ":"))
    assert len(schema) < 3000  # 2.8 KB: what pinned a worker thread forever
    for arguments in ({"amount": "x"}, {"amount": 1}, {"amount": "x"}):  # every retry is answered too
        _refused(served.edit(schema, arguments), "steps", "branch out", "an edit cannot be checked")
        assert _checking_threads() == []


# Most of these schemas cost the whole step budget to refuse (about half a second each): ten of them span the
# depths, fan-outs and combinators; the forty-level schema of the issue is checked above.
@settings(PROBES, max_examples=10)
@given(
    levels=st.integers(8, 60),
    fan_out=st.integers(2, 4),
    combinator=st.sampled_from(["allOf", "anyOf", "oneOf"]),
    fits=st.booleans(),
)
def test_any_branching_schema_is_answered_and_frees_its_thread(
    served: Served, levels: int, fan_out: int, combinator: str, fits: bool
) -> None:
    answer = served.edit(_branching(levels, fan_out, combinator), {"amount": 1 if fits else "x"})
    assert answer.status in (200, 422), (answer.status, answer.body[:300])
    if answer.status == 422:
        reason = answer.json()["error"]
        assert "'arguments.amount'" in reason or "steps" in reason, reason
    assert _checking_threads() == []


def test_a_usual_tool_schema_is_checked_within_the_bound(served: Served) -> None:
    schema = {
        **_object(
            path={"type": "string", "minLength": 1},
            rows={"type": "array", "items": _object(id={"type": "integer"}, name={"type": "string"})},
        ),
        "required": ["path"],
        "additionalProperties": False,
    }
    rows = [{"id": i, "name": f"row {i}"} for i in range(500)]
    assert served.edit(schema, {"path": "/tmp/x", "rows": rows}).status == 200
    rows[250]["id"] = "two hundred and fifty"
    _refused(served.edit(schema, {"path": "/tmp/x", "rows": rows}), "'arguments.rows[250].id'")
