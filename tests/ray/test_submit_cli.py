"""tamesu submit and tamesu jobs refuse what cannot work before reaching for a cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def tamesu(cwd: Path, *args: str) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TAMESU_ADDRESS", "RAY_API_SERVER_ADDRESS")}
    proc = subprocess.run(
        [sys.executable, "-m", "tamesu", *args], cwd=cwd, env={**env, "NO_COLOR": "1"},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return proc.returncode, proc.stdout + proc.stderr


def test_an_invalid_suite_is_reported_before_anything_is_submitted(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "suite: bad\ntargets: {}\ntests: [ { name: x, target: nowhere, scenario: { goal: hi } } ]\n"
    )
    code, out = tamesu(tmp_path, "submit", "bad.yaml", "--address", "http://127.0.0.1:9")
    assert code == 2, out
    assert "bad.yaml" in out and "submitted" not in out


def test_an_address_is_required(tmp_path: Path) -> None:
    code, out = tamesu(tmp_path, "jobs")
    assert code == 2 and "needs --address" in out
    code, out = tamesu(tmp_path, "jobs", "logs", "--address", "http://127.0.0.1:9")
    assert code == 2 and "needs a job id" in out


def test_an_unreachable_cluster_is_an_infrastructure_error(tmp_path: Path) -> None:
    code, out = tamesu(tmp_path, "jobs", "--address", "http://127.0.0.1:9")
    assert code == 3, out
    assert "cannot reach the Ray job API at http://127.0.0.1:9" in out and "Traceback" not in out
