"""The Jaeger UI source release kept in ``third_party/jaeger-ui/`` is the one its README names: the archive's
checksum, its licence beside it, and the version the build script and Jaeger's pin expect."""

from __future__ import annotations

import hashlib
import re
import tarfile

from tests.support.paths import REPO

UI = REPO / "third_party" / "jaeger-ui"
ARCHIVE = UI / "jaeger-ui-v1.75.0.tar.gz"


def test_the_archive_is_the_release_its_readme_names() -> None:
    readme = (UI / "README.md").read_text(encoding="utf-8")
    (recorded,) = re.findall(r"sha256: `([0-9a-f]{64})`", readme)
    assert hashlib.sha256(ARCHIVE.read_bytes()).hexdigest() == recorded
    with tarfile.open(ARCHIVE) as archive:
        package = archive.extractfile("jaeger-ui-v1.75.0/packages/jaeger-ui/package.json")
        assert package is not None
        assert '"version": "1.75.0"' in package.read().decode()
        licence = archive.extractfile("jaeger-ui-v1.75.0/LICENSE")
        assert licence is not None
        assert licence.read() == (UI / "LICENSE").read_bytes()
    assert "Apache License" in (UI / "LICENSE").read_text(encoding="utf-8")


def test_the_build_script_builds_this_archive_for_the_pinned_jaeger() -> None:
    script = (REPO / "scripts" / "e2e-deps.sh").read_text(encoding="utf-8")
    assert f"archive=third_party/jaeger-ui/{ARCHIVE.name}" in script
    go_mod = (REPO / "tests" / "e2e" / "go" / "jaeger" / "go.mod").read_text(encoding="utf-8")
    assert "github.com/jaegertracing/jaeger v1.75.0" in go_mod
