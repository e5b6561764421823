"""A golden file named with an agent's captured value stays inside the suite's folder: an agent
that answers ``ORDER ../../outside/x`` neither writes its replies outside (``--update-golden``)
nor gets a JSON file it names read back into the results; a real run against a loopback agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tamesu import run_async
from tamesu.testing.echo_agent import serve_echo_agent
from tamesu.untrusted import OutsideFolder, inside

pytestmark = pytest.mark.integration

SUITE = """
suite: orders
targets:
  api: { type: rest, url: "URL/chat", response: { text: $.reply } }
tests:
  - name: order
    target: api
    capture: [ { name: order, regex: "ORDER (\\\\S+)" } ]
    scenario: { max_turns: 1, script: [ { say: "ORDER WHERE" } ] }
    assert:
      - golden: { file: "golden/{{captured.order}}.json", mode: exact }
"""


async def _run(tmp_path: Path, where: str, **options: object) -> tuple[object, Path]:
    suite_dir = tmp_path / "project" / "suites"
    (suite_dir / "golden").mkdir(parents=True)
    async with serve_echo_agent() as url:
        (suite_dir / "suite.yaml").write_text(SUITE.replace("URL", url).replace("WHERE", where))
        result = await run_async([suite_dir / "suite.yaml"], output=tmp_path / "runs", **options)
    [run] = result.results
    return run, suite_dir


async def test_update_golden_never_writes_outside_the_suite_folder(tmp_path: Path) -> None:
    run, _ = await _run(tmp_path, "../../../outside/x", update_golden=True)
    [golden] = run.assertions
    assert golden.error and "golden file" in golden.message and "'..'" in golden.message
    assert not (tmp_path / "outside").exists() and not (tmp_path / "project" / "outside").exists()
    assert run.outcome == "error"


async def test_a_json_file_the_agent_names_is_not_read_into_the_results(tmp_path: Path) -> None:
    (tmp_path / "secret.json").write_text(json.dumps(["the password is hunter2"]))
    run, _ = await _run(tmp_path, "../../../secret")
    [golden] = run.assertions
    assert golden.error and golden.expected is None
    assert "hunter2" not in "".join(p.read_text() for p in (tmp_path / "runs").rglob("*") if p.is_file())


async def test_a_captured_name_inside_the_folder_still_works(tmp_path: Path) -> None:
    run, suite_dir = await _run(tmp_path, "ord-7", update_golden=True)
    assert run.outcome == "passed", [a.message for a in run.assertions]
    assert json.loads((suite_dir / "golden" / "ord-7.json").read_text()) == ["echo: ORDER ord-7"]


@pytest.mark.unit
@pytest.mark.parametrize("name", ["/etc/passwd", "../x.json", "a/../../x.json", "a\x00b", ""])
def test_inside_refuses_names_that_leave_the_folder(tmp_path: Path, name: str) -> None:
    with pytest.raises(OutsideFolder):
        inside(tmp_path, name, what="golden file")


@pytest.mark.unit
def test_inside_refuses_a_symbolic_link_that_leads_out(tmp_path: Path) -> None:
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "golden").symlink_to(tmp_path)
    with pytest.raises(OutsideFolder, match="symbolic link"):
        inside(tmp_path / "suite", "golden/x.json")
    assert inside(tmp_path / "suite", "a/b.json") == (tmp_path / "suite" / "a" / "b.json").resolve()
