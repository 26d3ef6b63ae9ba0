"""A trace's views read again while it has not changed come from what the server kept (``_http.renders``),
and are exactly what reading it afresh gives; any change to the trace (a new span, a pending record ended, a
log record, a trace dropped and sent again) is in the next read. Only the renderings of traces of at least
``render_min_spans`` spans are kept: the tests of what is kept set it to 1, for traces of a few spans. In
process, through the application."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.asgi import AsgiClient
from toolspan.bridge.internal import LogRecord
from toolspan.bridge.model import Span
from toolspan.bridge.views.registry import VIEWS
from toolspan.server import ServerConfig, build_app, open_store
from toolspan.server._http.render import render
from toolspan.server._http.routes.pages import _page_bytes as page_bytes
from toolspan.server._http.routes.traces import _otlp as otlp_bytes

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
ROOT = "00f067aa0ba902b7"
PER_TRACE = [v.name for v in VIEWS.values() if v.per_trace and v.media == "json"]


def span(
    span_id: str, name: str, start: int, end: int | None, parent: str | None = ROOT, **attrs: Any
) -> Span:
    return Span(
        trace_id=TRACE,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_ns=start,
        end_ns=end,
        attributes=attrs,
    )


def agent() -> Span:
    attrs = {"gen_ai.operation.name": "invoke_agent"}
    return span(ROOT, "invoke_agent planner", 1_000, 90_000, None, **attrs)


def tool(span_id: str, name: str, start: int, end: int | None) -> Span:
    return span(
        span_id,
        f"execute_tool {name}",
        start,
        end,
        **{
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.arguments": '{"q": "x"}',
        },
    )


class Served:
    def __init__(self, tmp_path: Path, cache_bytes: int = 64 * 1024 * 1024, min_spans: int = 1) -> None:
        self.store = open_store(str(tmp_path / "store.db"))
        config = ServerConfig(
            db=self.store.path, parse_workers=0, render_cache_bytes=cache_bytes, render_min_spans=min_spans
        )
        app, self.state = build_app(config, self.store)
        self.client = AsgiClient(app)

    def get(self, path: str) -> bytes:
        answer = self.client.request("GET", path)
        assert answer.status == 200, answer.body[:300]
        return answer.body

    def renders(self) -> dict[str, int]:
        return dict(self.client.request("GET", "/healthz").json()["renders"])

    def fresh(self, view: str) -> bytes:
        """The view as the store's spans give it now, rendered afresh (what a read must equal)."""
        spans = self.store.trace_spans(TRACE)
        return {"page": page_bytes, "otlp": otlp_bytes}.get(view, functools.partial(render, view))(spans)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    s = Served(tmp_path)
    s.store.ingest([agent(), tool("a1a1a1a1a1a1a1a1", "search", 2_000, 9_000)])
    with s.client:
        yield s
    s.store.close()


def test_a_second_read_of_an_unchanged_trace_is_kept_and_the_same(served: Served) -> None:
    for view in PER_TRACE:
        first = served.get(f"/api/traces/{TRACE}/{view}")
        before = served.renders()
        assert served.get(f"/api/traces/{TRACE}/{view}") == first == served.fresh(view)
        after = served.renders()
        assert (after["hits"], after["misses"]) == (before["hits"] + 1, before["misses"]), view
    page = served.get(f"/api/traces/{TRACE}/page")
    otlp = served.get(f"/api/traces/{TRACE}/otlp")
    before = served.renders()
    assert (served.get(f"/api/traces/{TRACE}/page"), served.get(f"/api/traces/{TRACE}/otlp")) == (page, otlp)
    after = served.renders()
    # The OTLP JSON read from the renderings; the page document from the one its page streams keep (built
    # once per version for both): neither is built again.
    assert (after["hits"], after["misses"]) == (before["hits"] + 1, before["misses"])


@pytest.mark.parametrize("view", ["tree", "events", "page", "otlp"])
def test_every_change_to_the_trace_is_in_the_next_read(served: Served, view: str) -> None:
    path = f"/api/traces/{TRACE}/{view}"
    changes = [
        # A new span of the trace, still running.
        lambda: served.store.ingest([tool("b2b2b2b2b2b2b2b2", "fetch", 10_000, None)]),
        # Its pending record ended (the same span, replaced).
        lambda: served.store.ingest([tool("b2b2b2b2b2b2b2b2", "fetch", 10_000, 20_000)]),
        # A log record tied to one of its spans.
        lambda: served.store.ingest_logs(
            [LogRecord(TRACE, "a1a1a1a1a1a1a1a1", 3_000, "gen_ai.choice", {"gen_ai.system": "x"}, "hello")]
        ),
    ]
    seen = [served.get(path), served.get(path)]  # the second one kept
    for change in changes:
        change()
        seen.append(served.get(path))
        assert seen[-1] == served.fresh(view)
    # Each change shows in what the view holds: the running call, then its end, then (where the view holds
    # log records) the record.
    assert seen[2] != seen[1]
    assert seen[3] != seen[2]
    if view in ("otlp", "page"):
        assert b"hello" in seen[4]
        assert b"hello" not in seen[3]


def test_a_trace_dropped_and_sent_again_is_read_afresh(served: Served) -> None:
    path = f"/api/traces/{TRACE}/tree"
    first = served.get(path)
    assert served.store.prune(max_age_ns=None, max_spans=0) == 1
    assert served.client.request("GET", path).status == 404
    served.store.ingest([agent()])
    again = served.get(path)
    assert again != first
    assert again == served.fresh("tree")


def test_what_is_kept_stays_within_its_bound(tmp_path: Path) -> None:
    served = Served(tmp_path, cache_bytes=6_000)
    traces = [f"{i:032x}" for i in range(1, 6)]
    with served.client:
        for trace_id in traces:
            served.store.ingest(
                [dataclasses.replace(s, trace_id=trace_id) for s in (agent(), tool("c3" * 8, "search", 2, 3))]
            )
            served.get(f"/api/traces/{trace_id}/tree")
            assert served.renders()["bytes"] <= 6_000
        kept = served.renders()
        assert 0 < kept["kept"] < len(traces)
    served.store.close()


def test_nothing_is_kept_when_the_bound_is_zero(tmp_path: Path) -> None:
    served = Served(tmp_path, cache_bytes=0)
    served.store.ingest([agent()])
    with served.client:
        first = served.get(f"/api/traces/{TRACE}/tree")
        assert served.get(f"/api/traces/{TRACE}/tree") == first
        assert served.renders() == {"kept": 0, "bytes": 0, "hits": 0, "misses": 0}
    served.store.close()


def tools(count: int) -> list[Span]:
    return [tool(f"{i + 1:016x}", "search", 2_000 + i, 3_000 + i) for i in range(count)]


@pytest.mark.parametrize("what", ["tree", "otlp", "page"])
def test_only_the_renderings_of_traces_of_the_kept_size_are_kept(tmp_path: Path, what: str) -> None:
    served = Served(tmp_path, min_spans=ServerConfig().render_min_spans)
    size = served.state.renders.min_spans
    assert size > 2
    small, large = f"{1:032x}", f"{2:032x}"
    served.store.ingest([dataclasses.replace(s, trace_id=small) for s in [agent(), *tools(size - 2)]])
    served.store.ingest([dataclasses.replace(s, trace_id=large) for s in [agent(), *tools(size - 1)]])
    with served.client:
        for trace_id, kept in ((small, 0), (large, 1)):
            first = served.get(f"/api/traces/{trace_id}/{what}")
            assert served.get(f"/api/traces/{trace_id}/{what}") == first
            # A trace one span short of the size is made afresh at each read, and nothing of it kept; a
            # trace of the size is kept at its first read (and its tree and OTLP JSON answered from it at
            # the second: the page document is then the one its page streams keep).
            renders = served.renders()
            assert renders["kept"] == kept, trace_id
            assert renders["hits"] == (0 if what == "page" else kept), trace_id
    served.store.close()


def test_the_job_routes_and_the_replay_document_are_kept_apart(served: Served) -> None:
    tree = served.get(f"/api/jobs/{TRACE}/trace")
    replay = served.get(f"/api/jobs/{TRACE}/replay")
    assert tree == served.fresh("tree")
    assert replay != tree
    assert served.get(f"/api/jobs/{TRACE}/replay") == replay
    assert served.get(f"/api/jobs/{TRACE}/trace") == tree


def test_the_trace_page_is_kept_per_token_kind_and_follows_the_trace(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "store.db"))
    store.ingest([agent(), tool("a1a1a1a1a1a1a1a1", "search", 2_000, 9_000)])
    app, _ = build_app(ServerConfig(db=store.path, parse_workers=0, render_min_spans=1), store)
    with AsgiClient(app) as client:

        def page() -> bytes:
            answer = client.request("GET", f"/traces/{TRACE}")
            assert (answer.status, answer.headers["content-type"]) == (200, "text/html; charset=utf-8")
            return answer.body

        first = page()
        hits = client.request("GET", "/healthz").json()["renders"]["hits"]
        assert page() == first
        assert client.request("GET", "/healthz").json()["renders"]["hits"] == hits + 1
        store.ingest([tool("b2b2b2b2b2b2b2b2", "fetch_page", 10_000, None)])
        again = page()
        assert b"fetch_page" in again
        assert b"fetch_page" not in first
    store.close()


def test_a_live_page_keeps_the_spans_it_decoded_and_a_view_read_keeps_none(served: Served) -> None:
    """The page's first screen and its data keep what they decoded (``_store.decoded``), so the next version
    of a live page decodes only what changed; the other views' reads keep nothing."""
    from toolspan.server._http.routes.pages import HEAD_STEPS

    def decoded() -> tuple[int, int, int]:
        stats = served.client.request("GET", "/healthz").json()["decoded_spans"]
        return stats["kept"], stats["hits"], stats["misses"]

    calls = [tool(f"{n:016x}", "search", 10_000 + n, 20_000 + n) for n in range(1, HEAD_STEPS)]
    served.store.ingest(calls)  # HEAD_STEPS + 1 spans: the page opens on its first screen
    total = HEAD_STEPS + 1
    for view in ("tree", "otlp", "events"):
        served.get(f"/api/traces/{TRACE}/{view}")
    assert decoded() == (0, 0, 0)
    served.get(f"/traces/{TRACE}")  # the first screen: its spans decoded and kept
    assert decoded() == (HEAD_STEPS, 0, HEAD_STEPS)
    served.get(f"/api/traces/{TRACE}/page")  # the whole document: only the rest decoded
    assert decoded() == (total, HEAD_STEPS, HEAD_STEPS + 1)
    served.store.ingest([tool("b2b2b2b2b2b2b2b2", "fetch", 90_000, None)])
    page = served.get(f"/api/traces/{TRACE}/page")  # the next version: only the new span decoded
    assert decoded() == (total + 1, HEAD_STEPS + total, HEAD_STEPS + 2)
    assert page == served.fresh("page")


def test_a_trace_held_here_is_read_and_made_in_one_hand_off_to_the_thread_pool(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each hand-off to the pool costs about what a small trace's view does: its version, spans and bytes
    # are read in one, made or kept. A trace held nowhere is then looked up in Tempo or Jaeger when the
    # server names one (``TraceSource.elsewhere``) before its 404: this one names none.
    from toolspan.server._http.routes import traces

    handed: list[str] = []
    real = traces.run_in_threadpool

    async def counted(func: Any, *args: Any, **kwargs: Any) -> Any:
        handed.append(getattr(func, "__name__", repr(func)))
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(traces, "run_in_threadpool", counted)
    for view in ("tree", "otlp"):
        before = served.renders()
        for _ in range(2):  # made, then kept
            handed.clear()
            assert served.get(f"/api/traces/{TRACE}/{view}") == served.fresh(view)
            assert handed == ["_held"], view
        after = served.renders()
        assert (after["hits"], after["misses"]) == (before["hits"] + 1, before["misses"] + 1)
    handed.clear()
    assert served.client.request("GET", f"/api/traces/{'0' * 31}1/otlp").status == 404
    assert handed == ["_held"]


@pytest.mark.parametrize("kept", [True, False])
def test_a_trace_not_held_here_is_looked_for_in_the_store_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: bool
) -> None:
    # With renderings kept, a trace's version is read first: a trace without one (no summary row, which
    # its spans are written and dropped with) is not held, and its spans are not read. Without, its spans
    # are read, once: not again before its 404.
    served = Served(tmp_path, cache_bytes=64 * 1024 * 1024 if kept else 0)
    served.store.ingest([agent(), tool("a1a1a1a1a1a1a1a1", "search", 2_000, 9_000)])
    reads: list[str] = []
    for name in ("trace_version", "trace_spans", "trace_logs"):
        real = getattr(served.store, name)

        def counted(*args: Any, real: Any = real, name: str = name) -> Any:
            reads.append(name)
            return real(*args)

        monkeypatch.setattr(served.store, name, counted)
    with served.client:
        answer = served.client.request("GET", f"/api/traces/{'0' * 31}1/otlp")
        assert (answer.status, answer.json()["error"]) == (404, f"no trace '{'0' * 31}1'")
        assert reads == (["trace_version"] if kept else ["trace_spans"])
        body = served.get(f"/api/traces/{TRACE}/otlp")
        assert reads[1:] == (["trace_version", "trace_spans"] if kept else ["trace_spans"])
        assert body == served.fresh("otlp")
    served.store.close()
