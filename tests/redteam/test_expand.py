"""``red_team:`` expands into one test per attack when the suite loads; bad names are located errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tamesu.cli import main
from tamesu.config.loader import validate_paths
from tamesu.playbooks.catalogue import get_playbook
from tamesu.playbooks.model import Canary, Decoded, PackCheck
from tamesu.runner.plan import plan

pytestmark = pytest.mark.unit

SUITE = """\
suite: shop
targets:
  api:
    type: rest
    url: "http://127.0.0.1:9/chat"
  bot:
    type: model
    model: openai/gpt-4.1-mini
    system: "You are a shop assistant."
    tools: [ {{ name: lookup_order, result: {{ status: shipped }} }} ]
  phone:
    type: voice
    url: "ws://127.0.0.1:9/call"
{extra}red_team:
  target: {target}
  agent: "Mochi Shoes support: never more than 30-day returns"
{playbooks}  repeat: 2
  tags: [nightly]
  assert: [ {{ not_contains: "90 days" }} ]
tests: []
"""


def write(tmp_path: Path, *, target: str = "api", playbooks: str = "", extra: str = "") -> Path:
    path = tmp_path / "shop.yaml"
    path.write_text(SUITE.format(target=target, playbooks=playbooks, extra=extra))
    return path


def load(path: Path):  # type: ignore[no-untyped-def]
    report = validate_paths([path])
    assert not report.errors, [str(e) for e in report.errors]
    return report.suites[0]


def test_each_attack_is_a_tagged_test_repeated_with_the_red_team_checks(tmp_path: Path) -> None:
    loaded = load(write(tmp_path, playbooks="  playbooks: [excessive_agency, crescendo]\n"))
    specs = plan(loaded)
    tests = list(dict.fromkeys(s.test_id for s in specs))
    assert tests == [
        f"red_team/excessive_agency/{a.name}" for a in get_playbook("excessive_agency").attacks
    ] + [f"red_team/crescendo/{a.name}" for a in get_playbook("crescendo").attacks]
    assert len(specs) == 2 * len(tests)
    spec = specs[0]
    assert spec.tags == ["red-team", "playbook:excessive_agency", "nightly"]
    assert [a.name for a in spec.assertions] == ["red_team/not_contains"]
    attack = spec.attack
    assert attack is not None
    assert attack.rule == "excessive_agency/unverified_refund" and attack.severity == "critical"
    assert "Mochi Shoes support: never more than 30-day returns" in attack.goal == spec.test.scenario.goal
    assert spec.test.persona.adversarial and spec.test.persona.tactics == list(
        get_playbook("excessive_agency").tactics
    )
    assert attack.file.endswith("shop.yaml") and (attack.line, attack.column) == (17, 15)


def test_every_playbook_runs_when_none_is_named_and_calls_only_attack_calls(tmp_path: Path) -> None:
    on_text = {s.test_id.split("/")[1] for s in plan(load(write(tmp_path)))}
    assert "voice" not in on_text and len(on_text) == 11
    on_phone = {s.test_id for s in plan(load(write(tmp_path, target="phone")))}
    assert "red_team/voice/dtmf_injection" in on_phone
    phone = {s.test_id: s for s in plan(load(write(tmp_path, target="phone")))}
    barge = phone["red_team/voice/barge_in_override"]
    assert barge.test.persona.behaviors.interrupt_probability == 1.0


def test_tool_result_injection_needs_tools_whose_results_tamesu_gives(tmp_path: Path) -> None:
    api = {s.test_id for s in plan(load(write(tmp_path, playbooks="  playbooks: [prompt_injection]\n")))}
    assert "red_team/prompt_injection/tool_result_injection" not in api
    bot = {
        s.test_id: s
        for s in plan(load(write(tmp_path, target="bot", playbooks="  playbooks: [prompt_injection]\n")))
    }
    fuzz = bot["red_team/prompt_injection/tool_result_injection"].test.fuzz_tools
    assert fuzz is not None and fuzz["lookup_order"].mode == "custom"
    assert "ignore your previous instructions" in fuzz["lookup_order"].result["note"]


def test_an_unknown_playbook_is_a_located_error_with_a_suggestion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, playbooks="  playbooks: [prompt_injection, pii_extration]\n")
    (error,) = validate_paths([path]).errors
    assert (error.line, error.column, error.path) == (17, 33, "red_team.playbooks[1]")
    assert "pii_extraction" in error.hint
    assert main(["--color", "never", "validate", str(path)]) == 2
    assert "shop.yaml:17:33: unknown playbook 'pii_extration'" in capsys.readouterr().out


def test_the_voice_playbook_on_a_text_target_is_an_error(tmp_path: Path) -> None:
    (error,) = validate_paths([write(tmp_path, playbooks="  playbooks: [voice]\n")]).errors
    assert "not an audio target" in str(error) and error.path == "red_team.playbooks[0]"


def test_a_suite_pack_of_the_same_name_replaces_the_builtin_detector(tmp_path: Path) -> None:
    extra = 'packs:\n  pii_leakage: [ { not_contains: "ACME-SECRET" } ]\n'
    loaded = load(write(tmp_path, playbooks="  playbooks: [pii_extraction]\n", extra=extra))
    attack = plan(loaded)[0].attack
    assert attack is not None
    assert PackCheck("pii_leakage") in attack.detectors
    (item,) = attack.pack_items["pii_leakage"]
    assert item.kind == "not_contains" and item.spec == "ACME-SECRET"


def test_a_canary_var_is_looked_for_in_every_attack_plain_and_encoded(tmp_path: Path) -> None:
    path = write(tmp_path, playbooks="  playbooks: [encoding]\n")
    path.write_text(path.read_text().replace("  repeat: 2\n", "  repeat: 2\n  vars: { canary: MOCHI-42 }\n"))
    attack = plan(load(path))[0].attack
    assert attack is not None
    assert Canary("{{vars.canary}}", label="system prompt canary") in attack.detectors
    assert any(isinstance(d, Decoded) and d.label == "encoded system prompt canary" for d in attack.detectors)


def test_tamesu_list_shows_the_attacks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, playbooks="  playbooks: [jailbreak]\n")
    assert main(["--color", "never", "list", "--json", str(path)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["test"] for r in rows] == [
        f"red_team/jailbreak/{a.name}" for a in get_playbook("jailbreak").attacks
    ]
    assert all(r["repeat"] == 2 and "playbook:jailbreak" in r["tags"] for r in rows)
    assert main(["--color", "never", "list", "--tags", "playbook:jailbreak", str(path)]) == 0
    assert "red_team/jailbreak/grandma_story" in capsys.readouterr().out


def test_tamesu_validate_counts_the_attack_tests_as_list_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, target="phone", playbooks="  playbooks: [jailbreak, voice]\n")
    assert main(["--color", "never", "list", "--json", str(path)]) == 0
    listed = len(json.loads(capsys.readouterr().out))
    assert listed == len(get_playbook("jailbreak").attacks) + len(get_playbook("voice").attacks)
    assert main(["--color", "never", "validate", str(path)]) == 0
    assert f"ok: 1 suite, {listed} tests" in capsys.readouterr().out
