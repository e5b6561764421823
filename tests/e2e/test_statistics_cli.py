"""tamesu.yaml ``statistics`` through the real ``tamesu run``: intervals and early stopping."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

import pytest

SUITE = """
suite: stats
targets:
  api: {{ type: rest, url: "{url}/chat", response: {{ text: $.reply }} }}
tests:
  - name: steady
    target: api
    repeat: 40
    pass_threshold: 0.8
    scenario: {{ max_turns: 1, script: [ {{ say: "hello" }} ] }}
    assert: [ {{ contains: "hello" }} ]
"""

PROJECT = """
statistics: { pass_k: [3], early_stop: { alpha: 0.05, beta: 0.05, indifference: 0.1 } }
history: { enabled: false }
"""


@pytest.fixture
def agent() -> Iterator[tuple[str, list[str]]]:
    """Echoes every message back and counts the calls."""
    calls: list[str] = []

    class Echo(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            calls.append(body.get("message", ""))
            data = json.dumps({"reply": f"echo: {body.get('message', '')}"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", calls
    server.shutdown()


@pytest.mark.integration
def test_early_stop_ends_a_steady_test_after_the_runs_it_needs(
    agent: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, calls = agent
    (tmp_path / "tamesu.yaml").write_text(PROJECT)
    (tmp_path / "suite.yaml").write_text(SUITE.format(url=url))
    proc = subprocess.run(
        [sys.executable, "-m", "tamesu", "run", "suite.yaml", "--json", "out.json", "-j", "1"],
        cwd=tmp_path, env={**os.environ, "NO_COLOR": "1"}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [test] = json.loads((tmp_path / "out.json").read_text())["tests"]
    assert test["stopped"] == {"reason": "sprt", "after": 12, "decision": "pass"}
    assert test["spent"] == 12 and len(calls) == 12
    assert test["pass_count"] == "12/12 passed, threshold 0.80; stopped after 12 of 40 (SPRT)"
    assert test["interval"] == pytest.approx([0.7575, 1.0], abs=1e-4) and test["pass_hat_k"] == {"3": 1.0}
