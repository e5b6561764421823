"""A throwaway PostgreSQL server for the history tests: a cluster of its own in a temporary folder,
reached only through a unix socket there, with a password user, stopped when the tests end.

PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user of the
Debian package (``apt-get install postgresql``).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

PASSWORD = "hist/Secret:9431"
"""Characters a URL must encode, so the tests see the password both as written and encoded."""


@dataclass
class Server:
    socket_dir: Path

    def url(self, *, password: str = PASSWORD, database: str = "postgres") -> str:
        return f"postgresql://tamesu:{quote(password, safe='')}@/{database}?host={self.socket_dir}"

    def new_database(self) -> str:
        """The URL of a database of its own (each test starts from an empty history)."""
        import psycopg

        name = f"history_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(database=name)


def _bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


@contextmanager
def postgres_server() -> Iterator[Server]:
    initdb, pg_ctl = _bin("initdb"), _bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("needs PostgreSQL's server (Debian package postgresql)")
    as_user: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="tamesu-pg-"))
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(root, "postgres")
    data, sock, pwfile = root / "data", root / "sock", root / "pw"
    run = as_user
    try:
        subprocess.run([*run, "mkdir", "-m", "700", str(sock)], check=True)
        subprocess.run([*run, "sh", "-c", f"umask 077 && printf %s '{PASSWORD}' > {pwfile}"], check=True)
        subprocess.run(
            [*run, initdb, "-D", str(data), "-U", "tamesu", "--auth=scram-sha-256", f"--pwfile={pwfile}",
             "--no-sync", "-E", "UTF8", "--no-instructions"],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        options = f"-k {sock} -c listen_addresses='' -c fsync=off"
        subprocess.run(
            [*run, pg_ctl, "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "-t", "60", "start"],
            check=True, capture_output=True, timeout=90,
        )  # fmt: skip
        try:
            yield Server(sock)
        finally:
            subprocess.run(
                [*run, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"],
                capture_output=True, timeout=60, check=False,
            )  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)
