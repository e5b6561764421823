"""Without the a2a extra, validate warns about the tests that need it, and only those."""

from __future__ import annotations

from pathlib import Path

import pytest

from tamesu.config.loader import validate_paths
from tamesu.environment import MACHINE_CHECKS
from tamesu.extras import EXTRAS, Extra

pytestmark = pytest.mark.unit

SUITE = """
suite: a2a
remote_agents:
  billing: { reply: ok }
  desk: { reply: ok, addr: "127.0.0.1:8095" }
targets:
  shop: { type: a2a, url: "http://127.0.0.1:9" }
  api: { type: rest, url: "http://127.0.0.1:9/chat", headers: { X-Billing: "{{remote.billing.url}}" } }
  other: { type: rest, url: "http://127.0.0.1:9/chat" }
tests:
  - { name: on a2a, target: shop, scenario: { script: [ { say: hi } ] } }
  - { name: delegating, target: api, scenario: { script: [ { say: hi } ] } }
  - { name: plain, target: other, scenario: { script: [ { say: hi } ] }, assert: [ { delegated_to: desk } ] }
"""


def test_a_missing_a2a_extra_reaches_a2a_targets_and_the_tests_that_serve_remote_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(EXTRAS, "a2a", Extra("a2a", "a2a targets", ("tamesu_no_such_module",)))
    (tmp_path / "s.yaml").write_text(SUITE)
    warnings = validate_paths([tmp_path / "s.yaml"], checks=MACHINE_CHECKS).warnings
    found = {(w.path, w.tests) for w in warnings}
    assert found == {
        ("targets.shop.type", (0,)),
        ("remote_agents.billing", (1,)),
        ("remote_agents.desk", None),
    }
    assert all("pip install 'tamesu[a2a]'" in w.hint and w.kind == "extra" for w in warnings)


def test_with_the_extra_installed_an_a2a_suite_has_nothing_to_warn_about(tmp_path: Path) -> None:
    pytest.importorskip("a2a.client")
    (tmp_path / "s.yaml").write_text(SUITE)
    assert validate_paths([tmp_path / "s.yaml"], checks=MACHINE_CHECKS).warnings == []
