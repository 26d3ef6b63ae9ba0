"""The runnable examples of the README and of the guides in ``docs/`` run as written, so they cannot drift
from the code.

Markers (HTML comments, invisible on a rendered page; README.md repeats this in a comment):

- ``<!-- readme-test -->`` on the line before a fenced ```` ```python ```` or ```` ```bash ```` block
  marks it runnable. Marked blocks run in the order of their page, one after the other, in one
  temporary directory per page (so a ``bash`` block can read the file a ``python`` block wrote): python
  with this interpreter, bash with ``bash -euo pipefail``, the ``toolspan`` script on ``PATH``, no
  ``OTEL_*``/``TOOLSPAN_*`` variables from the caller. Each must exit 0 and write nothing to stderr (no
  warning, no traceback).
- ``<!-- readme-output -->`` on the line before the fenced block right after a marked block gives its
  expected stdout, compared like a doctest with ``ELLIPSIS`` (``...`` matches anything, ids and times).
  Without one, the block must print nothing.

- ``<!-- readme-install ... -->`` before the Quickstart's install block: its ``pip install`` lines must
  install this checkout (``.`` with extras the project provides) and are run as written with pip's
  ``--dry-run`` (offline, nothing changed); the README may nowhere say ``pip install toolspan`` (not on
  the index). The marked blocks above run with this interpreter, which has the test extra; so the
  Quickstart's blocks are also checked to import only what the core install brings.

- ``*Needs ...*``, a line of its own (italic, so a reader sees it) right above a block that cannot run
  here as written, says what it needs: ``*Needs `pip install ".[server]"`; the server runs until
  Ctrl-C.*``, ``*Needs an OpenAI key.*``. Such a block is not run by this file (a test of its own may run
  it: ``test_decide_recipe.py`` runs the README's "Let a person decide").

Every ``python``, ``bash``, ``sh``, ``shell`` or ``console`` block (and every block without a language) of
the README and the guides has one of these right above it: ``readme-test``, ``readme-install``, or a
``*Needs ...*`` line; ``test_every_command_block_runs_here_or_says_what_it_needs`` fails naming the block
that has none.
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.paths import REPO

README = REPO / "README.md"
DOCS = README.parent / "docs"
# The README and every guide; a page's marked blocks run in its own directory.
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
RUN_MARK = "<!-- readme-test -->"
OUTPUT_MARK = "<!-- readme-output -->"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Example:
    line: int  # 1-based line of the opening fence in README.md
    language: str
    code: str
    expected: str | None


def _fence_after(text: str, pos: int, mark: str) -> re.Match[str]:
    """The fenced block on the line after ``mark`` (which starts at ``pos``)."""
    match = _FENCE.match(text, pos + len(mark) + 1)
    assert match is not None, (
        f"README.md:{text.count(chr(10), 0, pos) + 1}: {mark} is not followed by a block"
    )
    return match


def examples(text: str) -> list[Example]:
    """Every marked block of ``text`` with its expected output, in order."""
    found = []
    for mark in re.finditer(re.escape(RUN_MARK), text):
        block = _fence_after(text, mark.start(), RUN_MARK)
        language, code = block.group(1), block.group(2)
        assert language in ("python", "bash"), f"readme-test block in {language!r}, not python or bash"
        expected = None
        rest = text[block.end() :].lstrip("\n")
        if rest.startswith(OUTPUT_MARK):
            expected = _fence_after(text, len(text) - len(rest), OUTPUT_MARK).group(2)
        found.append(Example(text.count("\n", 0, block.start()) + 1, language, code, expected))
    return found


def run(example: Example, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSPAN_"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    if example.language == "python":
        argv = [sys.executable, "-c", example.code]
    else:
        argv = ["bash", "-euo", "pipefail", "-c", example.code]
    return subprocess.run(argv, check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def matches(expected: str, got: str) -> bool:
    return doctest.OutputChecker().check_output(expected, got, doctest.ELLIPSIS)


@pytest.mark.processes
@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(README.parent)))
def test_marked_examples_run_as_written(page: Path, tmp_path: Path) -> None:
    found = examples(page.read_text(encoding="utf-8"))
    if page == README:
        assert len(found) >= 3  # the Quickstart's python and bash blocks
    for example in found:
        done = run(example, tmp_path)
        where = f"{page.relative_to(README.parent)}:{example.line} ({example.language})"
        assert (done.returncode, done.stderr) == (0, ""), f"{where}\n{done.stderr}"
        expected = example.expected if example.expected is not None else ""
        assert matches(expected, done.stdout), f"{where}: expected\n{expected}\ngot\n{done.stdout}"


NEEDS = re.compile(r"\*Needs \S[^\n]*\*")
COMMAND_LANGUAGES = frozenset({"python", "bash", "sh", "shell", "console", ""})


def unexplained(text: str) -> list[int]:
    """The lines of the command blocks of ``text`` that are neither marked runnable nor say what they need."""
    found = []
    for block in _FENCE.finditer(text):
        if block.group(1) not in COMMAND_LANGUAGES:
            continue
        before = text[: block.start()].rstrip("\n")
        above = before.rsplit("\n", 1)[-1]
        install = before.endswith("-->") and before[before.rfind("<!--") :].startswith(INSTALL_MARK)
        if above != RUN_MARK and not install and NEEDS.fullmatch(above) is None:
            found.append(text.count("\n", 0, block.start()) + 1)
    return found


def test_every_command_block_runs_here_or_says_what_it_needs() -> None:
    missing = [
        f"{page.relative_to(README.parent)}:{line}"
        for page in PAGES
        for line in unexplained(page.read_text(encoding="utf-8"))
    ]
    assert missing == [], "mark each block <!-- readme-test --> or put a *Needs ...* line above it"


def test_a_block_without_marker_or_needs_line_is_found() -> None:
    text = f"""{RUN_MARK}
```bash
echo runs
```

*Needs a running `toolspan serve`.*
```python
print("needs")
```

{INSTALL_MARK}: checked -->
```bash
pip install .
```

Prose, then a bare block:
```bash
echo bare
```

```
untagged
```

```text
output is not a command
```
"""
    assert unexplained(text) == [17, 21]


def test_the_guides_hold_runnable_examples() -> None:
    """The examples moved out of the README with their sections still run: the threads example and the
    approval examples among them; Instrumenting's recipe and Replay's record-then-replay run too."""
    marked = {page.name: len(examples(page.read_text(encoding="utf-8"))) for page in PAGES}
    assert marked["instrumenting.md"] >= 3
    assert marked["replay.md"] >= 1
    assert marked["approvals.md"] >= 2


@pytest.mark.processes
def test_quickstart_writes_the_trace_file_the_convert_lines_read(tmp_path: Path) -> None:
    python, bash = examples(README.read_text(encoding="utf-8"))[:2]
    assert "toolspan convert traces.jsonl" in bash.code
    assert run(python, tmp_path).returncode == 0
    assert (tmp_path / "traces.jsonl").stat().st_size > 0
    assert run(bash, tmp_path).returncode == 0
    assert '"conversationId": "conv-1"' in (tmp_path / "timeline.json").read_text(encoding="utf-8")


SAMPLE = f"""intro
{RUN_MARK}
```python
print("hi")
```

{OUTPUT_MARK}
```text
h...
```

```bash
echo not marked
```
{RUN_MARK}
```bash
echo one
```
"""


def test_markers_select_blocks_and_their_outputs() -> None:
    assert examples(SAMPLE) == [
        Example(3, "python", 'print("hi")\n', "h...\n"),
        Example(16, "bash", "echo one\n", None),
    ]


def test_a_marker_without_a_block_is_an_error() -> None:
    with pytest.raises(AssertionError, match=r"README.md:1: <!-- readme-test --> is not followed"):
        examples(f"{RUN_MARK}\ntext\n")


@pytest.mark.parametrize(
    ("expected", "got", "ok"),
    [("a...c\n", "abbbc\n", True), ("a...c\n", "abbbd\n", False), ("", "noise\n", False), ("", "", True)],
)
def test_output_comparison_uses_ellipsis_and_nothing_else(expected: str, got: str, ok: bool) -> None:
    assert matches(expected, got) is ok


@pytest.mark.processes
def test_a_failing_or_noisy_block_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-the-caller")
    failing = run(Example(1, "bash", "echo out; echo oops >&2; exit 3\n", None), tmp_path)
    assert (failing.returncode, failing.stdout, failing.stderr) == (3, "out\n", "oops\n")
    unset = run(Example(1, "bash", 'echo "${OTEL_SERVICE_NAME:-unset}"\n', None), tmp_path)
    assert unset.stdout == "unset\n"


# --- the install the Quickstart gives works as written, from this checkout ------------------------------

INSTALL_MARK = "<!-- readme-install"
PIP_DRY_RUN = (
    *(sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index"),
    *("--no-build-isolation", "--disable-pip-version-check"),
)
ROOT = README.parent


def install_lines(text: str) -> list[str]:
    """The ``pip install`` commands of the block after the ``readme-install`` comment."""
    at = text.index(INSTALL_MARK)
    after = text.index("-->", at) + len("-->")
    block = _FENCE.match(text, after + 1)
    assert block is not None, "readme-install is not followed by a block"
    assert block.group(1) == "bash"
    commands = [line.split("#", 1)[0].strip() for line in block.group(2).splitlines()]
    return [c for c in commands if c.startswith("pip install")]


def test_the_install_names_no_package_the_index_does_not_have() -> None:
    """toolspan is not on PyPI: no line of the README may tell a newcomer to install it from there."""
    text = README.read_text(encoding="utf-8")
    assert re.findall(r"pip install ['\"]?toolspan\b", text) == []
    lines = install_lines(text)
    assert lines[0] == "pip install ."
    assert len(lines) >= 2


@pytest.mark.processes
def test_each_install_line_installs_from_this_checkout_with_extras_that_exist() -> None:
    """Each pip line, run as written from the checkout (pip's dry run: offline, nothing changed), resolves
    to this project; every extra it names is one the project provides."""
    from importlib import metadata

    provided = set(metadata.metadata("toolspan").get_all("Provides-Extra") or [])
    assert {"server", "examples", "fast", "policy", "test"} <= provided
    for line in install_lines(README.read_text(encoding="utf-8")):
        args = [a.strip("\"'") for a in line.split()[2:]]
        for arg in args:
            extras = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", arg)
            assert extras is not None, f"{line}: installs {arg!r}, not this checkout"
            assert set((extras.group(1) or "").split(",")) - {""} <= provided, line
        done = subprocess.run(
            [*PIP_DRY_RUN, *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"{line}\n{done.stderr}"
        assert "Would install toolspan-" in done.stdout, line


def test_the_quickstart_blocks_need_only_the_core_install() -> None:
    """The README's runnable blocks (the Quickstart) import only what `pip install .` brings."""
    import ast

    from tests.support.installs import distribution, installed_by, third_party

    text = README.read_text(encoding="utf-8")
    core = installed_by(set())
    checked = 0
    for example in examples(text):
        if example.language != "python":
            continue
        for node in ast.walk(ast.parse(example.code)):
            modules = []
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            for module in modules:
                checked += 1
                if third_party(module, set()):
                    assert distribution(module) in core, module
    assert checked >= 3


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_between_the_pages_lands() -> None:
    """Each relative link of the README and the guides names a file that exists, and an anchor it has."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # an absolute URL
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            assert dest.exists(), f"{page.name}: link to {target} lands nowhere"
            if anchor and dest.suffix == ".md":
                headings = re.findall(r"^#{1,4} (.+)$", dest.read_text(encoding="utf-8"), re.MULTILINE)
                assert anchor in {_anchor(h) for h in headings}, f"{page.name}: no anchor {target}"


def test_jargon_is_explained_on_its_own_page() -> None:
    explained = (DOCS / "concepts.md").read_text(encoding="utf-8").lower()
    for term in ("seed", "SEALED", "bookmark", "live tail", "act/observe", "DENIED"):
        assert term.lower() in explained, term


def test_the_pages_use_the_cli_s_own_flag_names() -> None:
    """`--to` is the flag (`--format` only as its old name), as `toolspan audit --help` says."""
    text = "".join(page.read_text(encoding="utf-8") for page in PAGES)
    assert re.findall(r"--format (?:json|text|html)", text) == []
    assert "--to json" in text
