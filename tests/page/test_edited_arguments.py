"""The trace page's arguments panel of an edited call, in real headless Chromium: the arguments the tool
received, labelled edited (who decided, when), with the model's own beside them.

The trace is a real run (``tests.support.edited_runs``): the model asked ``transfer(amount=5000)``, the
approver ``alice`` allowed it with ``amount=50``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.support.edited_runs import edited_run
from toolspan.bridge.views import to_pages
from toolspan.page import render_html

pytestmark = pytest.mark.processes


def test_the_arguments_panel_shows_the_received_arguments_labelled_with_the_models_beside(
    browser: Browser, tmp_path: Path
) -> None:
    # A hostile decider name is shown as text, never run as markup.
    pages = to_pages(edited_run())
    (step,) = [s for s in pages[0]["steps"] if s["kind"] == "tool"]
    step["edited"]["by"] = "<img src=x onerror=window.__pwn()>alice"
    path = tmp_path / "page.html"
    path.write_text(render_html(pages), "utf-8")
    context = browser.new_context()
    try:
        page = context.new_page()
        page.add_init_script("window.__pwned = 0; window.__pwn = () => { window.__pwned += 1; };")
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri() + "#" + step["execution_id"])
        page.wait_for_selector("body[data-ready='1']")
        detail = page.locator("#detail")
        headings = [h.removesuffix("copy") for h in detail.locator("h4").all_text_contents()]
        at = headings.index("Arguments (edited)")
        assert headings[at + 1] == "The model's arguments"
        note = detail.locator("p.edited").text_content() or ""
        assert note.startswith("Edited by <img src=x onerror=window.__pwn()>alice at +")
        assert note.endswith(": the tool received these arguments, not the model's (below).")
        received = detail.locator("h4:has-text('Arguments (edited)') + p.edited + .json")
        expect(received).to_contain_text('"amount": 50')
        expect(detail.locator(".model-args")).to_contain_text('"amount": 5000')
        assert page.locator("img").count() == 0
        assert page.evaluate("window.__pwned") == 0
        assert errors == []
    finally:
        context.close()
