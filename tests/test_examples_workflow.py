"""The GitHub Actions example stays valid YAML and every tamesu command in it parses."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from tamesu.cli import build_parser

pytestmark = pytest.mark.unit

WORKFLOW = Path(__file__).parents[1] / "examples" / "github_actions" / "tamesu.yml"


def _tamesu_commands() -> list[list[str]]:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    commands = []
    for step in workflow["jobs"]["agent-tests"]["steps"]:
        for line in step.get("run", "").splitlines():
            line = line.strip()
            if line.startswith("tamesu "):
                commands.append(shlex.split(line.split(">", 1)[0])[1:])
    return commands


def test_the_workflow_runs_reports_and_diffs_with_commands_tamesu_accepts() -> None:
    commands = _tamesu_commands()
    assert [c[0] for c in commands] == ["run", "report", "diff"]
    for argv in commands:
        args = build_parser(argv[0], environ={}).parse_args(argv)
        assert args.command == argv[0]
    diff = build_parser("diff", environ={}).parse_args(commands[2])
    assert diff.markdown and diff.a == "baseline/tamesu-run" and diff.b == "tamesu-run"


def test_tamesu_is_installed_from_a_pinned_repository_not_from_pypi() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    installs = [
        step["run"]
        for step in workflow["jobs"]["agent-tests"]["steps"]
        if "pip install" in step.get("run", "")
    ]
    assert installs == ['pip install "tamesu @ git+${TAMESU_GIT}"']
    repository, _, commit = workflow["env"]["TAMESU_GIT"].rpartition("@")
    assert repository.startswith("https://") and commit
