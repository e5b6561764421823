"""Audio tests are checked at validation: the STT must hear the language, the voice must resolve."""

from __future__ import annotations

from pathlib import Path

import pytest

from tamesu.config.load import validate_paths

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
    return [f"{e.path}: {e.message}" for e in validate_paths([tmp_path / "s.yaml"]).errors]


def test_a_language_the_default_stt_cannot_hear_is_an_error(tmp_path: Path) -> None:
    (msg,) = problems(tmp_path, "    languages: [en, es]")
    assert msg.startswith("tests[0]: ") and "multilingual" in msg
    assert problems(tmp_path, "    languages: [en]") == []
    assert problems(tmp_path, "    languages: [es]", target="chat") == [], "text tests need no STT"


def test_an_unknown_voice_and_a_missing_noise_file(tmp_path: Path) -> None:
    msgs = problems(
        tmp_path, "    persona: { voice: xx-YY-robot, behaviors: { background_noise: noise/none.wav } }"
    )
    assert any("xx-YY-robot" in m for m in msgs) and any("none.wav" in m for m in msgs)
