"""``{{remote.NAME.url}}`` in the suite's hooks: a ``before_each`` hook tells the agent under test
where its remote agent is (as one configures a real agent), then the run delegates to it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("a2a.client", reason="the a2a extra is not installed")

from tamesu.testing.a2a_agent import serve_a2a_agent

from ..stored import stored_transcript

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
    from tamesu import run_async

    async with serve_a2a_agent() as shop:
        suite = tmp_path / "suite.yaml"
        suite.write_text(SUITE.format(shop=shop.url, admin=shop.url + "admin/delegate"))
        result = await run_async(suite, output=tmp_path / "out")
    [run] = result.results
    assert run.outcome == "passed", (run.error, [a.message for a in run.assertions])
    configured, cleared = shop.admin
    assert configured["url"].startswith("http://127.0.0.1:") and configured["url"].endswith("/")
    assert cleared == {"url": "", "was": configured["url"] + ".well-known/agent-card.json"}


LONG_RUNNING = """
suite: an agent configured once
remote_agents:
  billing: {{ name: Billing, reply: "Refund noted" }}
hooks:
  before_all:
    - http: {{ url: "{admin}", body: {{ url: "{{{{remote.billing.url}}}}" }} }}
  after_all:
    - http: {{ url: "{admin}", body: {{ url: "", was: "{{{{remote.billing.url}}}}" }} }}
targets:
  shop: {{ type: a2a, url: "{shop}" }}
tests:
{tests}
"""

ORDER_TEST = """\
  - name: refund {order}
    target: shop
    scenario: {{ script: [ {{ say: "delegate: refund order {order}" }}, {{ say: "delegate: and again for {order}" }} ] }}
    assert:
      - contains: "Billing says: Refund noted"
      - delegated_to: {{ agent: billing, contains: "order {order}" }}
"""


async def test_remote_agents_serve_the_whole_suite_from_before_all_and_each_run_keeps_its_own_exchanges(
    tmp_path: Path,
) -> None:
    """A long-running agent under test is told once, in before_all, where its delegate is; runs in
    flight share that delegate, and each run's delegated_to reads only its own messages."""
    import httpx

    from tamesu import run_async

    orders = ["A1", "B2", "C3", "D4"]
    async with serve_a2a_agent() as shop:
        suite = tmp_path / "suite.yaml"
        tests = "".join(ORDER_TEST.format(order=o) for o in orders)
        suite.write_text(LONG_RUNNING.format(shop=shop.url, admin=shop.url + "admin/delegate", tests=tests))
        result = await run_async(suite, output=tmp_path / "out", concurrency=4)
    assert [r.outcome for r in result.results] == ["passed"] * 4, [
        (r.error, [a.message for a in r.assertions]) for r in result.results
    ]
    configured, cleared = shop.admin
    url = configured["url"]
    assert url.startswith("http://127.0.0.1:") and cleared == {"url": "", "was": url}, (
        "one URL, all suite long"
    )
    assert result.run_dir is not None
    for run in result.results:
        order = run.test_id.split()[-1]
        tr = stored_transcript(result.run_dir, run)
        heard = [
            e["text"] for e in tr["events"] if e["type"] == "a2a_remote" and e["direction"] == "received"
        ]
        assert heard == [f"delegate: refund order {order}", f"delegate: and again for {order}"], (
            order,
            heard,
        )
    async with httpx.AsyncClient() as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(url + ".well-known/agent-card.json")
