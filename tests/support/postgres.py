"""A real PostgreSQL server for the tests: Debian's ``postgresql`` binaries (``initdb``, ``pg_ctl``), a
cluster in a temporary directory of its own, on a free 127.0.0.1 port, stopped and removed at the end.

PostgreSQL refuses to run as root: when the tests run as root, the server runs as ``nobody`` (``runuser``),
and only the temporary directory created here is handed to that user. Each test gets a database of its
own (``fresh_url``: ``CREATE DATABASE``, a few milliseconds).
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

USER = "postgres"


def bin_dir() -> Path | None:
    """The newest installed PostgreSQL's ``bin`` directory (Debian layout), or ``None``."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name)
    )
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Postgres:
    """One PostgreSQL cluster in a temporary directory."""

    def __init__(self, binaries: Path, *, fsync: bool = False) -> None:
        """``fsync``: as in production (the benchmark); the tests run without (a crash of the server
        process keeps every commit either way: only the machine crashing would not)."""
        self.bin = binaries
        self.fsync = fsync
        self.root = Path(tempfile.mkdtemp(prefix="toolspan-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self._names = itertools.count(1)
        self._as: list[str] = []
        if os.geteuid() == 0:
            import pwd

            nobody = pwd.getpwnam("nobody")
            os.chown(self.root, nobody.pw_uid, nobody.pw_gid)
            self._as = ["runuser", "-u", "nobody", "--"]
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", USER, "-E", "UTF8", "--no-sync")

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run(
            [*self._as, str(self.bin / tool), *args],
            check=True,
            capture_output=True,
            timeout=60,
            cwd=self.root,
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1"
            f" -c fsync={'on' if self.fsync else 'off'}"
            " -c max_connections=300 -c shared_buffers=64MB"
        )
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.log), "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        """``fast``: a clean shutdown; ``immediate``: as if it crashed (recovery at the next start)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, mode: str = "immediate") -> None:
        self.stop(mode)
        self.start()

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def connect(self, database: str = "postgres") -> Any:
        import psycopg

        return psycopg.connect(self.url(database), autocommit=True)

    def fresh_url(self) -> str:
        """The URL of a new, empty database."""
        name = f"t{os.getpid()}_{next(self._names)}"
        with self.connect() as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with self.connect():
                    return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
