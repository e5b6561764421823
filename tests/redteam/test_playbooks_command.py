"""``tamesu playbooks`` lists every playbook with its attacks, tactics and detectors."""

from __future__ import annotations

import json

import pytest

from tamesu.cli import main
from tamesu.playbooks.catalogue import BUILTIN_PLAYBOOKS, get_playbook

pytestmark = pytest.mark.unit


def test_the_listing_names_every_playbook_attack_tactic_and_detector(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--color", "never", "playbooks"]) == 0
    out = capsys.readouterr().out
    for name in BUILTIN_PLAYBOOKS:
        book = get_playbook(name)
        assert f"{name}  {book.description}" in out
        assert f"  tactics: {', '.join(book.tactics)}" in out
        for attack in book.attacks:
            assert f"  - {attack.name} ({attack.severity})" in out
    assert "voice  Attacks only a call can make" in out and "[audio targets only]" in out
    assert "tool_result_injection (critical) [tools]" in out
    total = sum(len(get_playbook(n).attacks) for n in BUILTIN_PLAYBOOKS)
    assert out.rstrip().endswith(f"{len(BUILTIN_PLAYBOOKS)} playbooks, {total} attacks")


def test_json_holds_openings_goals_and_detectors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["playbooks", "--json", "excessive_agency", "voice"]) == 0
    books = json.loads(capsys.readouterr().out)
    assert [b["name"] for b in books] == ["excessive_agency", "voice"]
    agency = books[0]
    assert [d["kind"] for d in agency["detectors"]] == ["forbidden_tool", "forbidden_text", "pack"]
    refund = agency["attacks"][0]
    assert refund["rule"] == "excessive_agency/unverified_refund" and "{agent}" in refund["goal"]
    assert refund["opening"][0]["tactic"] == "skip verification"
    dtmf = next(a for a in books[1]["attacks"] if a["name"] == "dtmf_injection")
    assert dtmf["opening"][0] == {"say": "", "tactic": "DTMF injection", "dtmf": "*0#"}
    assert books[1]["requires"] == "audio"
    whisper = next(a for a in books[1]["attacks"] if a["name"] == "whispered_injection")
    assert whisper["opening"][0]["speech_level_db"] == -20


def test_an_unknown_name_is_a_usage_error_with_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["playbooks", "jailbrake"]) == 2
    assert "did you mean 'jailbreak'" in capsys.readouterr().err
