"""tamesu on a base install (no extras): nothing crashes; what needs an extra says which to install.

The CLI runs in a subprocess whose imports of every optional package fail, as they do where only
``pip install tamesu`` was run (a meta-path finder answers ModuleNotFoundError for them).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tamesu.testing import serve_echo_agent

pytestmark = pytest.mark.integration

BASE_INSTALL = """\
import sys

OPTIONAL = {
    "numpy", "soxr", "av", "webrtcvad", "faster_whisper", "piper", "ray", "pydantic_ai", "openai",
    "anthropic", "genai_prices", "livekit", "pipecat", "tokenizers", "safetensors", "llama_cpp",
    "threadpoolctl", "mcp", "grpc", "grpc_reflection",
}


class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in OPTIONAL:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
from tamesu.cli import main

sys.exit(main(sys.argv[1:]))
"""

SUITE = """\
suite: base
models: {{ default: openai/gpt-4.1-mini, embedder: local/minilm }}
targets:
  api:
    type: rest
    url: "{url}/chat"
    request: {{ body: {{ message: "{{{{message}}}}" }} }}
    response: {{ text: $.reply }}
  phone: {{ type: sip, direction: outbound, to: "+15550001" }}
  call: {{ type: voice, url: "ws://127.0.0.1:9/voice" }}
  tools: {{ type: mcp, command: ./orders-mcp, system: "You help." }}
  rpc: {{ type: grpc, url: "grpc://127.0.0.1:9" }}
tests:
  - name: plain
    target: api
    scenario: {{ script: [ {{ say: hello }} ] }}
    assert: [ {{ contains: "echo: hello" }} ]
  - name: sip call
    target: phone
    scenario: {{ script: [ {{ say: hello }} ] }}
    assert: [ {{ call_ended_by: [agent] }} ]
  - name: voice call
    target: call
    persona: {{ language: en }}
    scenario: {{ script: [ {{ say: hello }} ] }}
  - name: judged
    target: api
    scenario: {{ script: [ {{ say: hello }} ] }}
    assert: [ {{ judge: "The agent greets" }} ]
  - name: similar
    target: api
    scenario: {{ script: [ {{ say: hello }} ] }}
    assert: [ {{ similar_to: "hello" }} ]
  - name: mcp tools
    target: tools
    scenario: {{ script: [ {{ say: hello }} ] }}
  - name: grpc agent
    target: rpc
    scenario: {{ script: [ {{ say: hello }} ] }}
"""


@pytest.fixture
async def agent() -> AsyncIterator[str]:
    async with serve_echo_agent() as url:
        yield url


async def base_tamesu(cwd: Path, *args: str) -> tuple[int, str]:
    env = {**os.environ, "NO_COLOR": "1", "OPENAI_API_KEY": "sk-test"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", BASE_INSTALL, *args, cwd=cwd, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    text = out.decode()
    assert "Traceback" not in text and "this is a bug" not in text, text
    return proc.returncode or 0, text


async def test_a_base_install_validates_warns_and_runs_what_it_can(agent: str, tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").write_text(SUITE.format(url=agent))
    code, out = await base_tamesu(tmp_path, "validate", "suite.yaml")
    assert code == 0, out
    assert "tests[1].target (pip install 'tamesu[voice]')" in out, "a phone call over sip carries audio"
    assert "tests[2].target (pip install 'tamesu[voice]')" in out
    assert "pip install 'tamesu[models]'" in out and "pip install 'tamesu[embed]'" in out
    assert "a grpc target needs the grpc extra" in out and "pip install 'tamesu[mcp]'" in out
    assert out.splitlines()[-1].startswith("ok: 1 suite, 7 tests; 6 warnings")

    code, out = await base_tamesu(tmp_path, "validate", "--strict", "suite.yaml")
    assert code == 2, out

    code, out = await base_tamesu(tmp_path, "run", "suite.yaml")
    assert code == 3, out
    assert "1 passed, 0 failed, 6 errors" in out
    results = [
        json.loads(line) for line in (tmp_path / "tamesu-runs/latest/results.jsonl").read_text().splitlines()
    ]
    by_test = {r["test_id"]: r for r in results}
    assert by_test["plain"]["outcome"] == "passed"
    assert "pip install 'tamesu[voice]'" in by_test["sip call"]["error"]
    assert "pip install 'tamesu[voice]'" in by_test["voice call"]["error"]
    assert "pip install 'tamesu[models]'" in by_test["judged"]["error"]
    assert by_test["judged"]["error_kind"] == "model" and by_test["judged"]["turns"] == 0
    assert "pip install 'tamesu[embed]'" in by_test["similar"]["error"]
    assert "pip install 'tamesu[mcp]'" in by_test["mcp tools"]["error"]
    assert "pip install 'tamesu[grpc]'" in by_test["grpc agent"]["error"]


async def test_doctor_lists_the_extras_a_base_install_lacks(tmp_path: Path) -> None:
    code, out = await base_tamesu(tmp_path, "doctor", "--json")
    assert code == 0, out
    extras = {row["name"]: row for row in json.loads(out) if row["part"] == "extra"}
    assert {"models", "voice", "ray", "embed", "pipecat", "livekit", "local", "mcp", "grpc"} <= set(extras)
    assert not extras["mcp"]["ok"] and not extras["grpc"]["ok"]
    assert not extras["voice"]["ok"] and extras["voice"]["hint"].startswith("pip install 'tamesu[voice]'")
    assert "voice" in extras["voice"]["enables"] and not extras["ray"]["ok"]
