"""Whole suites on a2a targets: a delegation chain to a remote agent tamesu serves, and a counterpart."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("a2a.client", reason="the a2a extra is not installed")

from tamesu.testing.a2a_agent import serve_a2a_agent

from ..stored import stored_transcript

pytestmark = pytest.mark.integration

CHAIN = """
suite: delegation
vars: {{ shop_url: "{url}" }}
remote_agents:
  billing:
    name: Billing
    skills: [refund]
    replies:
      - {{ when: "(?i)refund", say: "Refund of 42 euros issued, reference RF-889", data: {{ reference: RF-889 }} }}
    reply: "I can help with refunds and invoices."
  shipping: {{ reply: "Parcels ship in two days." }}
targets:
  shop:
    type: a2a
    url: "{{{{vars.shop_url}}}}"
    transport: {transport}
    stream: true
    metadata: {{ delegate: "{{{{remote.billing.url}}}}" }}
tests:
  - name: the refund goes to billing
    target: shop
    scenario: {{ script: [ {{ say: "delegate: I want a refund for ORD-1001" }} ] }}
    assert:
      - contains: "Billing says: Refund of 42 euros issued"
      - delegated_to: {{ agent: billing, contains: "refund", regex: "ORD-\\\\d+" }}
      - json_path: {{ path: "$.status.state", equals: TASK_STATE_COMPLETED }}
  - name: shipping is never asked
    target: shop
    scenario: {{ script: [ {{ say: "delegate: refund again" }} ] }}
    assert:
      - delegated_to: shipping
"""


@pytest.mark.parametrize("transport", ["jsonrpc", "http", "grpc"])
async def test_a_delegation_chain_reaches_the_remote_agent_and_is_graded(
    tmp_path: Path, transport: str
) -> None:
    from tamesu import run_async

    async with serve_a2a_agent() as shop:
        suite = tmp_path / "suite.yaml"
        suite.write_text(CHAIN.format(url=shop.url, transport=transport))
        result = await run_async(suite, output=tmp_path / "out")
    by_name = {r.test_name: r for r in result.results}
    passed = by_name["the refund goes to billing"]
    assert passed.outcome == "passed", (passed.error, [a.message for a in passed.assertions])
    failed = by_name["shipping is never asked"]
    assert failed.outcome == "failed"
    assert failed.assertions[0].message == "the agent sent no message to shipping (it messaged billing)"
    delegated = shop.messages[0].metadata["delegate"]
    assert delegated.startswith("http://127.0.0.1:") and delegated.endswith("/")
    transcript = stored_transcript(result.run_dir, passed)
    remote = [
        (e["agent"], e["direction"], e["text"]) for e in transcript["events"] if e["type"] == "a2a_remote"
    ]
    assert remote == [
        ("billing", "received", "delegate: I want a refund for ORD-1001"),
        ("billing", "replied", "Refund of 42 euros issued, reference RF-889"),
    ]


COUNTERPART = """
suite: negotiation
targets:
  buyer: {{ type: a2a, url: "{buyer}" }}
  supplier: {{ type: a2a, url: "{supplier}", stream: true }}
tests:
  - name: two agents talk
    target: buyer
    counterpart: {{ target: supplier, opening: "We can offer 500 units at 12 euros each" }}
    scenario: {{ goal: "Agree on a price", max_turns: 2 }}
    assert:
      - contains: "echo: We can offer 500 units"
      - contains: "echo: echo: echo: We can offer"
"""


async def test_an_a2a_counterpart_plays_the_user(tmp_path: Path) -> None:
    from tamesu import run_async

    async with serve_a2a_agent(name="Buyer") as buyer, serve_a2a_agent(name="Supplier") as supplier:
        suite = tmp_path / "suite.yaml"
        suite.write_text(COUNTERPART.format(buyer=buyer.url, supplier=supplier.url))
        result = await run_async(suite, output=tmp_path / "out")
    (run,) = result.results
    assert run.outcome == "passed", (run.error, [a.message for a in run.assertions])
    assert [m.parts[0].text for m in buyer.messages] == [
        "We can offer 500 units at 12 euros each",
        "echo: echo: We can offer 500 units at 12 euros each",
    ]
    assert [m.parts[0].text for m in supplier.messages] == ["echo: We can offer 500 units at 12 euros each"]


async def test_a_suite_with_every_a2a_key_validates_without_warnings(tmp_path: Path) -> None:
    from tamesu.config.loader import load_suite

    (tmp_path / "invoice.pdf").write_bytes(b"%PDF")
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        """
suite: keys
secrets: { TOKEN: "env:HOME" }
remote_agents:
  billing:
    addr: 127.0.0.1:8095
    name: Billing
    description: Refunds and invoices
    skills: [refund, { id: invoice-lookup, name: Invoice lookup, description: Finds invoices, tags: [billing] }]
    replies: [{ when: "(?i)cancel", say: "Which order?", data: { step: 1 }, state: input-required }]
    reply: "I can help."
    extended: { description: "For partners", skills: [invoice-export] }
    token: "{{secrets.TOKEN}}"
  proxy: { forward: "https://billing.example.com/a2a", headers: { Authorization: "Bearer {{secrets.TOKEN}}" } }
targets:
  shop:
    type: a2a
    url: "https://shop.example.com"
    headers: { Authorization: "Bearer {{secrets.TOKEN}}", X-Billing: "{{remote.billing.url}}" }
    skill: orders
    metadata: { tenant: acme, billing: "{{remote.proxy.url}}" }
    transport: grpc
    stream: true
    push: { addr: "127.0.0.1:0", url: "https://tamesu.tunnel.example.com" }
    turn_timeout: 30s
tests:
  - name: everything
    target: shop
    scenario:
      script:
        - { say: "Refund please", data: { order: ORD-1 }, files: [invoice.pdf, { uri: "https://cdn.example.com/a.jpg", mime: image/jpeg, name: a.jpg }] }
    assert:
      - json_path: { path: $.status.state, equals: TASK_STATE_COMPLETED }
      - delegated_to: { agent: billing, contains: refund, regex: "ORD-\\\\d+" }
      - delegated_to: proxy
"""
    )
    loaded = load_suite(suite)
    assert [str(w) for w in loaded.unrunnable] == []
