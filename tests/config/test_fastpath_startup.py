"""``tamesu validate`` of a valid suite, in a fresh interpreter: pydantic is never imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SUITE = """\
suite: demo
targets:
  api: { type: rest, url: "http://127.0.0.1:9/chat" }
tests:
  - { name: greeting, target: api, languages: [en, es], scenario: { goal: "Ask about returns" } }
models: { default: ollama/llama3.2 }
"""

PROBE = """\
import sys
from tamesu.cli import main
code = main(["--color", "never", "validate", sys.argv[1]])
print(code, sorted(m for m in sys.modules if m.split(".")[0] == "pydantic" or m == "tamesu.config.suite"))
"""


def test_validate_of_a_valid_suite_never_imports_the_models(tmp_path: Path) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(suite)], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert out.stdout.splitlines() == ["ok: 1 suite, 1 test", "0 []"]


def test_an_invalid_suite_is_reported_by_the_models(tmp_path: Path) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text(SUITE.replace("type: rest", "type: rust"), encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(suite)], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    *errors, last = out.stdout.splitlines()
    assert last.startswith("2 [") and "'tamesu.config.suite'" in last
    assert errors[0].startswith("s.yaml:3:") and "rust" in errors[0]
