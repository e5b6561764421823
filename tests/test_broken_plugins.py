"""A broken plugin, in any of the three entry-point groups, stops the command the same way: exit 2
and one line naming the plugin, its package and its error, never a traceback.

Each plugin is a real installed distribution (a ``dist-info`` with ``entry_points.txt`` on
``PYTHONPATH``), read by ``importlib.metadata`` in a fresh ``tamesu`` process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SUITE = """\
suite: s
targets:
  api: { type: rest, url: "http://127.0.0.1:9/chat" }
tests:
  - name: t
    target: api
    scenario: { script: [ { say: hi } ] }
    assert: [ { contains: hi } ]
"""


def _install(site: Path, group: str, value: str, module: str, source: str) -> None:
    dist = site / "broken_plugin-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{group}]\nbroken = {value}\n")
    (site / f"{module}.py").write_text(source)


def _tamesu(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAMESU_")}
    env.update(PYTHONPATH=str(site), NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "tamesu", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


CASES = {
    "a target type that fails to import": (
        "tamesu.targets", "broken_types", "broken_types", "import no_such_module\n", ("validate", "s.yaml"),
        "the plugin broken (broken_types) of broken-plugin in tamesu.targets failed to load: "
        "ModuleNotFoundError: No module named 'no_such_module'",
    ),
    "an assertion that raises while importing": (
        "tamesu.assertions", "broken_checks:check", "broken_checks", "raise RuntimeError('half written')\n",
        ("validate", "s.yaml"),
        "the plugin broken (broken_checks:check) of broken-plugin in tamesu.assertions failed to load: "
        "RuntimeError: half written",
    ),
    "a playbook entry point that gives no playbook": (
        "tamesu.playbooks", "broken_books:books", "broken_books", "books = [42]\n", ("playbooks",),
        "the plugin broken (broken_books:books) of broken-plugin in tamesu.playbooks is not usable: "
        "it gave int, not a Playbook",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_a_broken_plugin_stops_the_command_naming_it(case: str, tmp_path: Path) -> None:
    group, value, module, source, args, said = CASES[case]
    site = tmp_path / "site"
    _install(site, group, value, module, source)
    (tmp_path / "s.yaml").write_text(SUITE)
    out = _tamesu(site, tmp_path, *args)
    text = out.stdout + out.stderr
    assert out.returncode == 2, text
    assert said in text
    assert "Traceback" not in text


def test_without_the_broken_plugin_the_same_commands_pass(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SUITE)
    site = tmp_path / "site"
    site.mkdir()
    assert _tamesu(site, tmp_path, "validate", "s.yaml").returncode == 0
    assert _tamesu(site, tmp_path, "playbooks").returncode == 0
