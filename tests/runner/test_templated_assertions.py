"""Templates render in every string of an assertion and in the names of generated tests, so a case
carries its own expected answer; a real run against the echo agent on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tamesu import run_async
from tamesu.testing.echo_agent import serve_echo_agent

pytestmark = pytest.mark.integration

SUITE = """
suite: pizzas
vars: { url: "URL", shop: Mochi }
targets:
  api:
    type: rest
    url: "{{vars.url}}/chat"
    response: { text: $.reply }
tests:
  - name: order
    target: api
    vars: { size: large }
    cases:
      - { name: "{{vars.pizza}}", vars: { pizza: margherita, expect: "one large margherita" } }
      - { name: "{{vars.pizza}} wrong", vars: { pizza: funghi, expect: "two funghi" } }
    capture: [ { name: order, regex: "large (\\\\w+)" } ]
    scenario: { max_turns: 1, script: [ { say: "one {{vars.size}} {{vars.pizza}} at {{vars.shop}}" } ] }
    assert:
      - contains: "{{vars.expect}}"
      - regex: "one {{vars.size}} {{vars.pizza}}"
      - not_contains: "{{env.TAMESU_FORBIDDEN_WORD}}"
      - captured: { name: order, equals: "{{vars.pizza}}" }
      - json_path: { path: $.reply, equals: "echo: one large {{vars.pizza}} at ${TAMESU_SHOP_NAME}" }
      - contains: "at ${TAMESU_SHOP_NAME}"
      - not_contains: "{{captured.order}} twice"
  - name: "from file {{vars.pizza}}"
    target: api
    cases_file: cases.csv
    scenario: { max_turns: 1, script: [ { say: "{{vars.pizza}}" } ] }
    assert:
      - contains: "{{vars.expect}}"
"""


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAMESU_FORBIDDEN_WORD", "pineapple")
    monkeypatch.setenv("TAMESU_SHOP_NAME", "Mochi")


async def test_case_vars_env_and_captures_render_in_assertions_and_names(tmp_path: Path) -> None:
    (tmp_path / "cases.csv").write_text("name,pizza,expect\n{{vars.pizza}},diavola,echo: diavola\n")
    async with serve_echo_agent() as url:
        (tmp_path / "suite.yaml").write_text(SUITE.replace("URL", url))
        result = await run_async([tmp_path / "suite.yaml"], output=tmp_path / "runs")
    verdicts = {t.test_id: t for t in result.tests}
    assert list(verdicts) == ["order [margherita]", "order [funghi wrong]", "from file diavola [diavola]"]
    good = verdicts["order [margherita]"].runs[0]
    assert good.outcome == "passed", [(a.name, a.message) for a in good.assertions if not a.passed]
    assert len(good.assertions) == 7
    assert verdicts["from file diavola [diavola]"].verdict == "passed"
    wrong = verdicts["order [funghi wrong]"].runs[0]
    failed = {a.name: a for a in wrong.assertions if not a.passed}
    assert list(failed) == ["contains"]
    assert failed["contains"].expected == "two funghi"


async def test_a_capture_the_run_never_made_fails_the_assertion_that_names_it(tmp_path: Path) -> None:
    suite = SUITE.split('  - name: "from file')[0].replace('regex: "large (\\\\w+)"', 'regex: "never (x)"')
    async with serve_echo_agent() as url:
        (tmp_path / "suite.yaml").write_text(suite.replace("URL", url))
        result = await run_async([tmp_path / "suite.yaml"], output=tmp_path / "runs", filter="margherita")
    [run] = result.results
    by_name = {a.name: a for a in run.assertions}
    names_it = by_name["not_contains#2"]
    assert not names_it.passed and not names_it.error
    assert names_it.message == "{{captured.order}}: nothing was captured in this run"
