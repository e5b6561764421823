"""Audio tests are checked at validation: the voice must resolve; an STT that cannot hear the
language here is a warning (the test cannot run on this machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tamesu.config.loader import validate_paths
from tamesu.environment import MACHINE_CHECKS
from tamesu.errors import Unrunnable

pytestmark = pytest.mark.unit

SUITE = """
suite: calls
targets:
  phone: {{ type: twilio, url: "ws://127.0.0.1:9/media" }}
  chat: {{ type: rest, url: "http://127.0.0.1:9/chat" }}
tests:
  - name: call
    target: {target}
{extra}
    scenario: {{ script: [ {{ say: hi }} ] }}
"""


def problems(tmp_path: Path, extra: str, target: str = "phone") -> list[str]:
    (tmp_path / "s.yaml").write_text(SUITE.format(extra=extra, target=target))
    return [
        f"{e.path}: {e.message}" for e in validate_paths([tmp_path / "s.yaml"], checks=MACHINE_CHECKS).errors
    ]


def warnings(tmp_path: Path, extra: str, target: str = "phone") -> list[Unrunnable]:
    (tmp_path / "s.yaml").write_text(SUITE.format(extra=extra, target=target))
    report = validate_paths([tmp_path / "s.yaml"], checks=MACHINE_CHECKS)
    assert report.errors == []
    return report.warnings


def test_other_languages_are_heard_offline_by_the_shipped_base_model(tmp_path: Path) -> None:
    assert warnings(tmp_path, "    languages: [en, es, de, fr]") == []


def test_a_language_the_stt_here_cannot_hear_is_a_warning_for_that_language(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tamesu.audio.stt.shipped import ShippedModel

    monkeypatch.setattr(ShippedModel, "installed", lambda self: False)  # a machine without Whisper base
    (problem,) = warnings(tmp_path, "    languages: [en, es]")
    assert problem.path == "tests[0].languages[1]" and "multilingual" in problem.message
    assert (problem.tests, problem.language) == ((0,), "es"), "the test still runs in English"
    assert warnings(tmp_path, "    languages: [en]") == []
    assert warnings(tmp_path, "    languages: [es]", target="chat") == [], "text tests need no STT"


def test_an_unknown_voice_and_a_missing_noise_file(tmp_path: Path) -> None:
    msgs = problems(
        tmp_path, "    persona: { voice: xx-YY-robot, behaviors: { background_noise: noise/none.wav } }"
    )
    assert any("xx-YY-robot" in m for m in msgs) and any("none.wav" in m for m in msgs)
