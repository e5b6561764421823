"""``--grid``: each audio test once per cell with the cell's persona settings, text tests untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from tamesu.config import Suite
from tamesu.errors import UsageError
from tamesu.runner.grid import expand_grid, parse_grid
from tamesu.runner.plan import plan
from tamesu.runner.verdict import result_of

from .test_plan import Loaded

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parent / "fixtures"


def suite() -> Loaded:
    data = {
        "suite": "s",
        "targets": {
            "phone": {"type": "voice", "url": "ws://127.0.0.1:9/voice"},
            "api": {"type": "rest", "url": "http://127.0.0.1:9/"},
        },
        "defaults": {"repeat": 2},
        "tests": [
            {
                "name": "returns",
                "target": "phone",
                "persona": {"voice": "en-US-male", "behaviors": {"silence_after_turn_ms": [100, 200]}},
                "scenario": {"script": [{"say": "hi"}]},
            },
            {"name": "text", "target": "api", "scenario": {"script": [{"say": "hi"}]}},
        ],
    }
    return Loaded(Suite.model_validate(data), FIXTURES / "s.yaml", FIXTURES)


def test_every_audio_run_plays_in_every_cell_with_its_repeats_and_the_cells_settings() -> None:
    grid = parse_grid(["line_quality=pstn,mobile_poor,voip_good", "background_noise=none,cafe@5"])
    specs = expand_grid(plan(suite()), grid)
    audio = [s for s in specs if s.target_name == "phone"]
    assert len(audio) == 3 * 2 * 2
    assert audio[0].run_id == "returns {line_quality=pstn, background_noise=none}#1"
    assert audio[1].run_id == "returns {line_quality=pstn, background_noise=none}#2"
    assert audio[-1].test_id == "returns {line_quality=voip_good, background_noise=cafe@5}"
    last = audio[-1]
    assert last.grid == {"line_quality": "voip_good", "background_noise": "cafe@5"}
    persona = last.test.persona
    assert persona is not None and persona.behaviors is not None
    assert (persona.voice, persona.behaviors.line_quality, persona.behaviors.background_noise) == (
        "en-US-male",
        "voip_good",
        "cafe",
    )
    assert persona.behaviors.background_noise_snr_db == 5.0
    assert persona.behaviors.silence_after_turn_ms == [100, 200]  # the test's own habits are kept
    assert audio[0].test.persona.behaviors.background_noise is None  # type: ignore[union-attr]
    assert [s.run_id for s in specs if s.target_name == "api"] == ["text#1", "text#2"]
    assert result_of(last).grid == {"line_quality": "voip_good", "background_noise": "cafe@5"}


def test_voice_language_and_interruptions_are_grid_keys_too() -> None:
    specs = expand_grid(
        plan(suite()), parse_grid(["voice=en-GB-female", "language=de", "interrupt_probability=0.5"])
    )
    phone = next(s for s in specs if s.target_name == "phone")
    assert phone.language == "de" and phone.test.persona is not None
    assert phone.test.persona.voice == "en-GB-female" and phone.test.persona.language == "de"
    assert (
        phone.test.persona.behaviors is not None and phone.test.persona.behaviors.interrupt_probability == 0.5
    )


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("noise=cafe", "KEY one of line_quality"),
        ("line_quality=landline", "one of pstn, mobile_poor, voip_good, none"),
        ("interrupt_probability=2", "a number from 0 to 1"),
        ("background_noise=cafe@loud", "NOISE@SNR_DB"),
        ("voice=", "no values"),
    ],
)
def test_a_bad_grid_is_a_usage_error_naming_the_item(item: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_grid([item])
