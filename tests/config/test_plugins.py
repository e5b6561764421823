"""A plugin distribution's target type and assertion kind, found through its entry points, are
validated, documented in the JSON Schema and run the way the built-ins are.

The plugin is a real installed distribution: a ``dist-info`` folder with ``entry_points.txt`` in a
folder on ``PYTHONPATH``, read by ``importlib.metadata`` in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PLUGIN = '''\
"""A target type and an assertion kind in one module, as a plugin writes them."""

from typing import Literal

from tamesu.kernel.messages import AgentTurn
from tamesu.assertions import assertion
from tamesu.config.common import ConfigModel, F
from tamesu.config.target_base import SAY, TalkingTarget
from tamesu.targets import TargetAdapter, target


class ParrotTarget(TalkingTarget):
    """An agent that repeats what it hears, louder."""

    type: Literal["parrot"] = F("The parrot type.", "parrot")
    squawk: str = F("What it adds to every answer.", "squawk!", default="squawk!")


@target("parrot", config=ParrotTarget, parts={"text": SAY}, summary="A parrot that repeats you")
class ParrotAdapter(TargetAdapter):
    config: ParrotTarget

    async def whole_answer(self, user):
        return [AgentTurn(text=f"{user.text.upper()} {self.config.squawk}")]

    async def turn(self, user):
        for message in await self.whole_answer(user):
            yield message


class Echoed(ConfigModel):
    """Words some agent turn must repeat."""

    words: str = F("The words.", "HELLO")


@assertion("echoed", spec=Echoed, description="Some agent turn repeats these words.", example={"words": "HI"},
           summary="some agent turn repeats the words")
def echoed(spec: Echoed, ctx):
    return spec.words in ctx.transcript.agent_text(), f"no turn repeats {spec.words!r}"
'''

SUITE = """\
suite: birds
targets:
  polly: { type: parrot, squawk: "awk!" }
tests:
  - name: repeats
    target: polly
    scenario: { script: [ { say: hello } ] }
    assert:
      - echoed: { words: "HELLO awk!" }
      - contains: awk
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A folder holding the installed plugin distribution ``parrot-plugin``."""
    site = tmp_path / "site"
    dist = site / "parrot_plugin-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: parrot-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[tamesu.targets]\nparrot = parrot_plugin\n\n[tamesu.assertions]\nechoed = parrot_plugin:echoed\n"
    )
    (site / "parrot_plugin.py").write_text(PLUGIN)
    return site


def tamesu(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), "NO_COLOR": "1"}
    env = {k: v for k, v in env.items() if not k.startswith("TAMESU_")}
    return subprocess.run(
        [sys.executable, "-m", "tamesu", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


def test_a_plugin_suite_validates_and_its_mistakes_are_named(site: Path, tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SUITE)
    ok = tamesu(site, tmp_path, "validate", "s.yaml")
    assert ok.returncode == 0 and "ok: 1 suite, 1 test" in ok.stdout, ok.stdout + ok.stderr
    bad_suite = SUITE.replace('squawk: "awk!"', "squak: x").replace("{ words:", "{ word:")
    bad_suite = bad_suite.replace(
        "targets:\n", 'targets:\n  api: { type: rest, url: "http://127.0.0.1:9/chat", squawk: loud }\n'
    )
    (tmp_path / "bad.yaml").write_text(bad_suite)
    bad = tamesu(site, tmp_path, "validate", "bad.yaml")
    assert bad.returncode == 2
    assert "`squawk` applies to type parrot, not rest at targets.api.squawk" in bad.stdout
    assert "unknown key 'squak' at targets.polly.squak (did you mean 'squawk'?)" in bad.stdout
    assert "unknown key 'word' at tests[0].assert[0].echoed.word (did you mean 'words'?)" in bad.stdout


def test_the_schema_carries_the_plugins_type_and_kind(site: Path, tmp_path: Path) -> None:
    out = tamesu(site, tmp_path, "schema")
    schema = json.loads(out.stdout)
    union = schema["properties"]["targets"]["additionalProperties"]
    assert union["discriminator"]["mapping"]["parrot"] == "#/$defs/ParrotTarget"
    assert schema["$defs"]["ParrotTarget"]["properties"]["squawk"]["default"] == "squawk!"
    assert schema["$defs"]["Assertion"]["properties"]["echoed"]["$ref"] == "#/$defs/Echoed"


def test_a_plugin_suite_runs_through_its_adapter_and_evaluator(site: Path, tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SUITE)
    run = tamesu(site, tmp_path, "run", "s.yaml", "--output", str(tmp_path / "runs"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout
