"""The trace page renderer (``toolspan.page``) and ``toolspan convert --to html``, without a browser."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import toolspan
from tests.support.page_data import hostile_payloads, hostile_run
from toolspan.bridge.views import to_pages
from toolspan.cli import main
from toolspan.exporters.otlp_file import OtlpJsonFileExporter
from toolspan.page import (
    WORDS,
    LiveOptions,
    content_security_policy,
    embed_json,
    page_json,
    render_app,
    render_html,
)
from toolspan.testing import capture_spans

NO_NETWORK_CSP = (
    "default-src 'none'; script-src {script}; style-src {style}; img-src data:; connect-src 'none'; "
    "form-action 'none'; base-uri 'none'"
)


class _Doc(HTMLParser):
    """Every start tag with its attributes, and the text inside each script and style element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.raw: list[tuple[str, dict[str, str | None], str]] = []
        self._open: tuple[str, dict[str, str | None]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._open = (tag, dict(attrs))
            self.raw.append((tag, dict(attrs), ""))

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            tag, attrs, text = self.raw[-1]
            self.raw[-1] = (tag, attrs, text + data)

    def handle_endtag(self, tag: str) -> None:
        if self._open is not None and tag == self._open[0]:
            self._open = None


def parse(html: str) -> _Doc:
    doc = _Doc()
    doc.feed(html)
    doc.close()
    return doc


def sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def small_pages() -> list[dict[str, Any]]:
    @toolspan.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    with capture_spans(deterministic=True) as finished:
        with toolspan.agent("calc", input="1 + 2?"):
            add(1, 2)
        from toolspan.bridge.readers import from_readable_spans

        return to_pages(from_readable_spans(finished()))


def test_embed_json_cannot_close_its_element_and_round_trips() -> None:
    data = {"a": "</script><!-- & \u2028\u2029 >", "</script>": ["\ud800 lone", "ok"]}
    text = embed_json(data)
    assert not re.search("[<>&\u2028\u2029\ud800-\udfff]", text)
    assert "\\u003c/script\\u003e" in text
    assert json.loads(text) == data
    text.encode("utf-8")  # valid UTF-8: the lone surrogate is escaped, not written raw


def test_page_is_self_contained_and_csp_allows_only_its_own_script_and_style() -> None:
    pages = small_pages()
    html = render_html(pages)
    doc = parse(html)
    scripts = [(attrs, text) for tag, attrs, text in doc.raw if tag == "script"]
    styles = [text for tag, _attrs, text in doc.raw if tag == "style"]
    assert [a for a, _t in scripts] == [
        {"id": "ts-config", "type": "application/json"},
        {"id": "ts-data", "type": "application/json"},
        {},
        {},
    ]
    assert len(styles) == 1
    common, code = scripts[2][1], scripts[3][1]
    csp = [a["content"] for t, a in doc.tags if a.get("http-equiv") == "Content-Security-Policy"]
    assert csp == [NO_NETWORK_CSP.format(script=sha(common) + " " + sha(code), style=sha(styles[0]))]
    assert content_security_policy([common, code], styles[0], live=False) == csp[0]
    assert json.loads(scripts[1][1]) == pages
    assert json.loads(scripts[0][1]) == {"live": None, "words": WORDS}
    # Nothing loads from elsewhere: the only URL is the inline data: icon.
    urls = [v for _t, a in doc.tags for k, v in a.items() if k in ("src", "href", "action", "data")]
    assert len(urls) == 1
    assert urls[0] is not None
    assert urls[0].startswith("data:image/svg+xml,")
    for script in (common, code):
        assert "innerHTML" not in script
        assert "insertAdjacentHTML" not in script
        assert "document.write" not in script


def test_the_top_bar_asks_only_the_urls_it_is_given() -> None:
    """The script holds no URL: what the top bar asks (whoami, the waiting calls) and where it leads (the
    runs, the inbox) come from the config."""
    live = LiveOptions("/s", "/d", whoami_url="/who", waiting_url="/waiting", list_url="/l", inbox_url="/i")
    doc = parse(render_html(small_pages(), live=live))
    config = json.loads(next(text for tag, attrs, text in doc.raw if attrs.get("id") == "ts-config"))
    assert config["urls"] == {"whoami": "/who", "waiting": "/waiting", "list": "/l", "inbox": "/i"}
    app = parse(render_app("inbox", {"whoami": "/api/whoami", "waiting": "/api/control/waiting"}))
    config = json.loads(next(text for tag, attrs, text in app.raw if attrs.get("id") == "ts-config"))
    assert config["urls"] == {"whoami": "/api/whoami", "waiting": "/api/control/waiting"}
    scripts = [text for tag, attrs, text in app.raw if tag == "script" and not attrs]
    common = next(text for text in scripts if "toolspanCommon" in text)
    assert "/api/" not in common


def test_live_page_may_connect_to_its_own_origin_only() -> None:
    html = render_html(small_pages(), live=LiveOptions(stream_url="/stream?x=<", data_url="api/data"))
    doc = parse(html)
    csp = next(a["content"] for t, a in doc.tags if t == "meta" and a.get("http-equiv"))
    assert csp is not None
    assert "connect-src 'self'" in csp
    assert "connect-src 'none'" not in csp
    config = next(text for tag, attrs, text in doc.raw if attrs.get("id") == "ts-config")
    assert json.loads(config) == {
        "live": {"stream_url": "/stream?x=<", "data_url": "api/data", "fetch_first": False},
        "words": WORDS,
    }


def test_hostile_values_stay_inside_the_data_element() -> None:
    payloads = hostile_payloads()
    assert len(payloads) >= 200
    pages = to_pages(hostile_run(payloads))
    html = render_html(pages)
    doc = parse(html)
    # The payloads made no element: the document has exactly the template's tags.
    assert [t for t, _a in doc.tags] == [t for t, _a in parse(render_html(small_pages())).tags]
    data = next(text for tag, attrs, text in doc.raw if attrs.get("id") == "ts-data")
    assert json.loads(data) == pages
    assert json.loads(page_json(pages)) == pages


def test_title_is_escaped() -> None:
    html = render_html({"title": "</title><script>x()</script>", "steps": []})
    assert "<title>&lt;/title&gt;&lt;script&gt;x()&lt;/script&gt; \u2014 toolspan</title>" in html


def _otlp_file(path: Path, traces: int) -> None:
    @toolspan.tool
    def search(q: str) -> list[str]:
        """Search."""
        return [q]

    with capture_spans() as finished:
        for n in range(traces):
            with toolspan.agent(f"agent-{n}", input=f"find {n}", new_trace=True):
                search(f"q{n}")
        exporter = OtlpJsonFileExporter(path)
        exporter.export(finished())
        exporter.shutdown()


@pytest.mark.parametrize("traces", [1, 2])
def test_convert_to_html_writes_one_page_for_all_traces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], traces: int
) -> None:
    src = tmp_path / "traces.jsonl"
    _otlp_file(src, traces)
    out = tmp_path / "run.html"
    assert main(["convert", str(src), "--to", "html", "-o", str(out)]) == 0
    assert capsys.readouterr().err == ""
    html = out.read_text("utf-8")
    data = json.loads(next(t for _tag, a, t in parse(html).raw if a.get("id") == "ts-data"))
    assert [p["title"] for p in data] == [f"find {n}" for n in range(traces)]  # each run named by its request
    labels = [[s["label"] for s in p["steps"]] for p in data]
    assert labels == [[f"agent-{n}", "search"] for n in range(traces)]
