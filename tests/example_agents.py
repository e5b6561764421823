"""The demo agents of ``examples/`` started as the quickstart starts them: a process on a free port
whose first line is ``listening on URL``."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = ["example_agent"]

ROOT = Path(__file__).resolve().parent.parent


def example_agent(name: str, *args: str, stop_within: float = 30.0) -> Iterator[str]:
    """Start ``examples/<name>/agent.py`` on port 0 with ``args``; yield its URL; stop it after."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / name / "agent.py"), "--port", "0", *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on "), line
        # keep reading what it prints, so it never blocks on a full pipe
        threading.Thread(target=proc.stdout.read, daemon=True).start()
        yield line.removeprefix("listening on ").strip()
    finally:
        proc.terminate()
        proc.wait(timeout=stop_within)
