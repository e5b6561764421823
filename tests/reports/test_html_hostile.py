"""report.html of a run whose agent answers with a huge turn full of control characters (C0 and
C1: escape, CSI, NUL, BEL, CR): the page stays small and holds the characters as visible escapes,
as the JSON files do; a real run against a loopback agent."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tamesu import run
from tamesu.reports.html import MAX_VALUE_CHARS, render_html
from tamesu.reports.rundir import RunDirectory
from tamesu.testing.echo_agent import serve_echo_agent

pytestmark = pytest.mark.integration

CONTROLS = "\x1b[2J\x9b31m\x00\x07\rover\x85"
SUITE = """
suite: flood
targets:
  api: { type: rest, url: "URL/chat", response: { text: $.reply } }
tests:
  - name: long
    target: api
    scenario: { max_turns: 1, script: [ { say: "SAY" } ] }
    assert: [ { contains: never } ]
"""
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


async def _page(tmp_path: Path) -> str:
    import asyncio

    say = CONTROLS + "x" * 300_000
    async with serve_echo_agent() as url:
        (tmp_path / "suite.yaml").write_text(
            SUITE.replace("URL", url).replace("SAY", say.encode("unicode_escape").decode())
        )
        result = await asyncio.to_thread(run, [tmp_path / "suite.yaml"], output=tmp_path / "runs")
    assert result.run_dir is not None
    return render_html(RunDirectory.open(result.run_dir))


async def test_a_huge_turn_is_cut_and_its_controls_are_escaped(tmp_path: Path) -> None:
    page = await _page(tmp_path)
    assert "x" * 1000 in page, "the turn is shown"
    assert len(page) < 4 * MAX_VALUE_CHARS + 200_000, f"the page is {len(page)} characters"
    assert "more characters" in page
    assert RAW.findall(page) == [], "controls reached the page raw"
    assert "\\x1b[2J\\x9b31m\\x00\\x07" in page
