"""``{{remote.NAME.url}}`` in the suite's hooks: a ``before_each`` hook tells the agent under test
where its remote agent is (as one configures a real agent), then the run delegates to it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("a2a.client", reason="the a2a extra is not installed")

from tamesu.testing.a2a_agent import serve_a2a_agent

pytestmark = pytest.mark.integration

SUITE = """
suite: configured by a hook
remote_agents:
  billing: {{ name: Billing, reply: "Refund issued, reference RF-889" }}
hooks:
  before_each:
    - http: {{ url: "{admin}", body: {{ url: "{{{{remote.billing.url}}}}" }} }}
  after_each:
    - http: {{ url: "{admin}", body: {{ url: "", was: "{{{{remote.billing.card_url}}}}" }} }}
targets:
  shop: {{ type: a2a, url: "{shop}" }}
tests:
  - name: the shop delegates where the hook told it
    target: shop
    scenario: {{ script: [ {{ say: "delegate: a refund please" }} ] }}
    assert:
      - contains: "Billing says: Refund issued, reference RF-889"
      - delegated_to: {{ agent: billing, contains: refund }}
"""


async def test_a_before_each_hook_configures_the_agent_under_test_with_the_remote_agents_url(
    tmp_path: Path,
) -> None:
    from tamesu.runner.api import run_async

    async with serve_a2a_agent() as shop:
        suite = tmp_path / "suite.yaml"
        suite.write_text(SUITE.format(shop=shop.url, admin=shop.url + "admin/delegate"))
        result = await run_async(suite, output=tmp_path / "out")
    [run] = result.results
    assert run.outcome == "passed", (run.error, [a.message for a in run.assertions])
    configured, cleared = shop.admin
    assert configured["url"].startswith("http://127.0.0.1:") and configured["url"].endswith("/")
    assert cleared == {"url": "", "was": configured["url"] + ".well-known/agent-card.json"}
