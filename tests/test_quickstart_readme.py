"""The README's quickstart shows the totals that examples/quickstart/run.sh prints."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_quickstart_counts_the_suites_tests_with_and_without_the_voice_extra() -> None:
    tests = yaml.safe_load((ROOT / "examples" / "quickstart" / "suite.yaml").read_text())["tests"]
    assert not any("repeat" in t or "cases" in t or "languages" in t for t in tests), "count runs, not tests"
    voice = sum("voice" in t.get("tags", []) for t in tests)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    shown = [int(n) for n in re.findall(r"^(\d+) passed, 0 failed, 0 errors$", section, re.M)]
    assert shown == [len(tests)]
    assert f"`{len(tests) - voice} passed, 0 failed, 0 errors`" in section
    assert f"That is {len(tests)} tests with the `voice` extra" in section
