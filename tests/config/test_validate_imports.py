"""What ``tamesu validate`` imports to check a suite that uses judges, embedders and a goal: the
contract and its checks, never the model router, an adapter, an evaluator, speech code or an HTTP
client."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import tamesu

pytestmark = pytest.mark.integration

SUITE = """\
suite: judged
models: { default: openai/gpt-4.1-mini, embedder: local/minilm }
targets:
  api: { type: rest, url: "http://127.0.0.1:9/chat" }
  phone: { type: voice, url: "ws://127.0.0.1:9/call" }
tests:
  - name: polite
    target: api
    scenario: { goal: "Ask about returns", stop_when: "the agent answered" }
    assert:
      - judge: { rubric: "The agent is polite", scale: "1-5", min: 4 }
      - grounded: { context: { text: ["Returns take 30 days"] } }
      - similar_to: "Returns take 30 days"
      - evaluator: genkitEval/faithfulness
      - golden: { turns: ["Returns take 30 days"], mode: judge }
      - handoff: { summary: "names the order" }
      - tool_called: { name: lookup, schema: { type: object } }
"""

PROBE = """\
import json, sys
from tamesu.cli import main
code = main(["--color", "never", "validate", sys.argv[1]])
print(json.dumps([code, sorted(sys.modules)]))
"""

NEVER = (
    "tamesu.models.router",
    "tamesu.judging",
    "tamesu.targets",
    "tamesu.wire",
    "tamesu.assertions",
    "tamesu.voice",
    "tamesu.audio",
    "tamesu.actors",
    "tamesu.runner.scheduler",
    "pydantic_ai",
    "openai",
    "httpx",
    "aiohttp",
    "asyncio",
    "numpy",
    "msgspec",
    "ray",
)
"""Module families a validate must not import (each name and everything below it)."""


def _target_settings(module: str) -> bool:
    """``tamesu.targets``, a wing's package or its ``settings``: what the target registry reads (every
    ``__init__`` there imports nothing); an adapter, ``tamesu.targets.base`` or any other module is not."""
    parts = module.split(".")
    if parts[:2] != ["tamesu", "targets"]:
        return False
    wing = len(parts) >= 3 and (Path(tamesu.__file__).parent / "targets" / parts[2] / "__init__.py").is_file()
    return len(parts) == 2 or (wing and parts[3:] in ([], ["settings"]))


def test_validate_of_a_judge_suite_imports_the_contract_and_nothing_that_runs(tmp_path: Path) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(suite)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env=env,
    )
    code, modules = json.loads(out.stdout.splitlines()[-1])
    assert code == 0, out.stdout
    imported = [
        m for m in modules if any(m == n or m.startswith(n + ".") for n in NEVER) and not _target_settings(m)
    ]
    assert imported == []
    assert {"tamesu.config.suite", "tamesu.targets.rest.settings", "tamesu.config.assertions.graded"} <= set(
        modules
    )
