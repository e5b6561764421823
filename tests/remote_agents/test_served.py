"""Which of the suite's remote agents a run serves."""

from __future__ import annotations

import pytest

from tamesu.config.suite import RemoteAgent
from tamesu.config.target import parse_target
from tamesu.remote_agents import served
from tamesu.run_spec import NamedAssertion

pytestmark = pytest.mark.unit

AGENTS = {
    "billing": RemoteAgent.model_validate({"reply": "ok"}),
    "shipping": RemoteAgent.model_validate({"reply": "ok"}),
    "legacy": RemoteAgent.model_validate({"reply": "ok", "addr": "127.0.0.1:8095"}),
}


def delegation(agent: object) -> NamedAssertion:
    from tamesu.config.assertion import Assertion

    return NamedAssertion(name="delegated_to", item=Assertion.model_validate({"delegated_to": agent}))


def test_a_run_serves_the_agents_its_target_names_and_those_with_a_fixed_address() -> None:
    target = parse_target({"type": "a2a", "url": "http://x", "metadata": {"b": "{{remote.billing.url}}"}})
    assert sorted(served(AGENTS, target=target, counterpart=None, test=None)) == ["billing", "legacy"]


def test_delegated_to_and_a_counterparts_configuration_name_agents_too() -> None:
    target = parse_target({"type": "a2a", "url": "http://x"})
    counterpart = parse_target({"type": "rest", "url": "{{remote.shipping.url}}chat"})
    names = served(
        AGENTS, target=target, counterpart=counterpart, test=None, assertions=[delegation("billing")]
    )
    assert sorted(names) == ["billing", "legacy", "shipping"]
    by_object = served(
        AGENTS, target=target, counterpart=None, test=None, assertions=[delegation({"agent": "shipping"})]
    )
    assert sorted(by_object) == ["legacy", "shipping"]


def test_a_suite_without_remote_agents_serves_none() -> None:
    target = parse_target({"type": "a2a", "url": "http://x"})
    assert served({}, target=target, counterpart=None, test=None) == {}


def test_the_suites_run_hooks_name_agents_too() -> None:
    from tamesu.config.common import Hooks

    target = parse_target({"type": "a2a", "url": "http://x"})
    hooks = Hooks.model_validate(
        {"before_each": [{"http": {"url": "http://admin/", "body": {"to": "{{remote.shipping.url}}"}}}]}
    )
    assert sorted(served(AGENTS, target=target, counterpart=None, test=None, hooks=hooks)) == [
        "legacy",
        "shipping",
    ]
