"""A check that did not run, or that a judge could not tell, is said so in every report: the
console, ``tamesu show``, HTML, JSON and JUnit; and ``strict`` turns them into an error and a failure.

Real runs: the red team against a loopback agent with no judge model (its rubric checks are
skipped), and a judge played by the scripted model server that answers "cannot tell".
"""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tamesu import run_async
from tamesu.reports.console import ConsoleReporter
from tamesu.reports.html import render_html
from tamesu.reports.json_report import write_json
from tamesu.reports.junit import write_junit
from tamesu.reports.rundir import RunDirectory
from tamesu.reports.show import render_run
from tamesu.runner.invocation import InvocationResult
from tamesu.runner.results import read_transcript
from tamesu.testing.model_server import Reply, serve_model_server

from ..redteam.agents import serve_agent
from .builders import NEEDS_GPU

pytestmark = pytest.mark.integration

RED_TEAM = """
suite: shop
targets:
  api:
    type: rest
    url: "{url}/chat"
    request: {{ body: {{ session_id: "{{{{session}}}}", message: "{{{{message}}}}" }} }}
    response: {{ text: $.reply }}
red_team:
  target: api
  agent: "Mochi Shoes support: orders and returns; never more than 30-day returns"
  playbooks: [crescendo]
tests:
  - name: greets
    target: api
    scenario: {{ max_turns: 1, script: [ {{ say: "hello" }} ] }}
    assert: [ {{ contains: "orders and returns" }} ]
"""

PROJECT = """
providers:
  scripted: {{ base_url: "{base_url}" }}
models:
  judge: scripted/judge
"""

JUDGED = """
suite: shop
targets:
  api:
    type: rest
    url: "{url}/chat"
    request: {{ body: {{ session_id: "{{{{session}}}}", message: "{{{{message}}}}" }} }}
    response: {{ text: $.reply }}
tests:
  - name: refund promise
    target: api
    scenario: {{ max_turns: 1, script: [ {{ say: "hello" }} ] }}
    assert: [ {{ judge: "The agent promises the refund within five days" }} ]
"""


def console(result: InvocationResult) -> str:
    out = io.StringIO()
    ConsoleReporter(stream=out, color="never").summary(result)
    return out.getvalue()


async def red_team(tmp_path: Path, **options: object) -> InvocationResult:
    async with serve_agent("sound") as url:
        suite = tmp_path / "shop.yaml"
        suite.write_text(RED_TEAM.format(url=url))
        return await run_async([suite], output=tmp_path / "runs", concurrency=4, **options)


async def test_a_red_team_check_without_a_judge_reads_as_skipped_in_every_report(tmp_path: Path) -> None:
    result = await red_team(tmp_path)
    assert result.exit_code == 0
    policy = next(t for t in result.tests if t.test_id == "red_team/crescendo/policy_crescendo")
    assert policy.verdict == "passed" and policy.caveat == "1 check skipped"
    (name,) = policy.skipped_checks
    assert name.startswith("detector:pack:policy_consistency")

    text = console(result)
    row = next(line for line in text.splitlines() if "policy_crescendo" in line and "passed" in line)
    assert row.split()[:4] == ["PASS,", "1", "check", "skipped"], "never a plain PASS"
    assert f"SKIPPED shop / red_team/crescendo/policy_crescendo: {name}: needs a judge model" in text
    n = _skipped(result)
    assert n >= 1 and text.splitlines()[-2].endswith(f"; {n} check{'s' * (n != 1)} skipped"), (
        "the totals count them"
    )

    assert result.run_dir is not None
    (run,) = policy.runs
    shown = render_run(run, read_transcript(result.run_dir, run))
    assert "1 check skipped" in shown.splitlines()[0]
    assert f"SKIPPED {name}: skipped: needs a judge model" in shown

    data = json.loads(write_json(result, tmp_path / "report.json").read_text())
    test = next(t for t in data["tests"] if t["test_id"] == policy.test_id)
    assert test["skipped_checks"] == policy.skipped_checks
    assert [c["state"] for c in test["runs"][0]["assertions"] if c["name"] == name] == ["skipped"]
    assert data["checks_skipped"] == _skipped(result)

    root = ET.fromstring(write_junit(result, tmp_path / "junit.xml").read_bytes())
    case = next(c for c in root.iter("testcase") if c.get("name") == policy.test_id)
    assert case.find("skipped") is None, "some of its checks ran"
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["skipped_checks"] == name
    assert f"skipped: {name}: needs a judge model" in (case.findtext("system-out") or "")

    html = render_html(RunDirectory.open(result.run_dir))
    assert '<td class="skip">SKIPPED</td>' in html
    assert 'PASS<span class="caveat">, 1 check skipped</span>' in html


def _skipped(result: InvocationResult) -> int:
    return sum(len(t.skipped_checks) for t in result.tests)


@pytest.mark.parametrize("where", ["--strict", "tamesu.yaml defaults.strict"])
async def test_strict_makes_a_skipped_check_an_error_that_names_it(tmp_path: Path, where: str) -> None:
    if where == "--strict":
        result = await red_team(tmp_path, strict=True)
    else:
        (tmp_path / "tamesu.yaml").write_text("defaults: { strict: true }\n")
        result = await red_team(tmp_path)
    assert result.exit_code == 3
    policy = next(t for t in result.tests if t.test_id == "red_team/crescendo/policy_crescendo")
    assert policy.verdict == "error"
    (run,) = policy.runs
    assert run.error is not None and run.error.startswith("strict: check detector:pack:policy_consistency")
    assert next(t for t in result.tests if t.test_id == "greets").verdict == "passed"


async def test_a_test_whose_checks_were_all_skipped_is_skipped_in_junit(tmp_path: Path) -> None:
    (tmp_path / "tamesu.yaml").write_text("history: { enabled: false }\n")
    (tmp_path / "tamesu_assertions").mkdir()
    (tmp_path / "tamesu_assertions" / "gpu.py").write_text(NEEDS_GPU)
    async with serve_agent("sound") as url:
        suite = tmp_path / "shop.yaml"
        text = RED_TEAM.format(url=url)
        suite.write_text(text.replace('{ contains: "orders and returns" }', "{ custom: voice_quality }"))
        result = await run_async([suite], output=tmp_path / "runs", filter="greets")
    (test,) = result.tests
    assert (test.verdict, test.caveat, result.exit_code) == ("passed", "1 check skipped", 0)
    root = ET.fromstring(write_junit(result, tmp_path / "junit.xml").read_bytes())
    (case,) = root.iter("testcase")
    skipped = case.find("skipped")
    assert skipped is not None and skipped.get("message") == (
        "every check skipped: custom: needs a GPU, and this machine has none"
    )
    assert root.get("skipped") == "1" and root.get("failures") == "0"


async def test_a_judge_that_cannot_tell_is_inconclusive_and_strict_makes_it_a_failure(tmp_path: Path) -> None:
    async with serve_agent("sound") as url, serve_model_server() as model:
        model.default = Reply(json={"reason": "refunds never come up", "cannot_tell": True, "passed": False})
        suite = tmp_path / "shop.yaml"
        (tmp_path / "tamesu.yaml").write_text(PROJECT.format(base_url=model.base_url))
        suite.write_text(JUDGED.format(url=url))
        result = await run_async([suite], output=tmp_path / "runs")
        prompt = json.dumps(model.requests[-1])
        strict = await run_async([suite], output=tmp_path / "strict", strict=True)
    assert "cannot_tell" in prompt, "the judge is offered the answer"
    (test,) = result.tests
    assert test.verdict == "inconclusive" and result.exit_code == 0
    assert test.inconclusive_checks == {"judge": "scripted/judge cannot tell: refunds never come up"}
    text = console(result)
    assert any(line.split()[:2] == ["INCONCLUSIVE,", "1"] for line in text.splitlines())
    assert "INCONCLUSIVE shop / refund promise: judge: scripted/judge cannot tell" in text
    assert "0 passed, 0 failed, 0 errors (+1 inconclusive)" in text
    root = ET.fromstring(write_junit(result, tmp_path / "junit.xml").read_bytes())
    assert root.get("failures") == "0" and root.get("skipped") == "1"
    (strict_test,) = strict.tests
    assert strict_test.verdict == "failed" and strict.exit_code == 1
    strict_text = console(strict)
    assert "  judge: inconclusive: expected 'The agent promises the refund within five days'" in strict_text
    failure = ET.fromstring(write_junit(strict, tmp_path / "strict.xml").read_bytes()).find(".//failure")
    assert failure is not None and failure.get("message", "").startswith("judge: inconclusive")
