"""A run's cost metrics from its figures and what it asked of speech engines."""

from __future__ import annotations

import pytest

from tamesu.config.prices import Prices
from tamesu.costs import run_costs
from tamesu.speech_pool import MeteredSpeech

pytestmark = pytest.mark.unit


def test_a_target_name_price_wins_over_its_type_and_minutes_add_to_the_model_cost() -> None:
    prices = Prices(call_minute={"sip": 0.01, "support_line": 0.05})
    metrics = {"call_duration_s": 90.0, "llm_cost_usd": 0.002}
    named = run_costs(metrics, prices=prices, target_name="support_line", target_type="sip")
    typed = run_costs(metrics, prices=prices, target_name="other", target_type="sip")
    assert named["call_minutes_cost_usd"] == pytest.approx(0.075)
    assert typed["call_minutes_cost_usd"] == pytest.approx(0.015)
    assert typed["cost_usd"] == pytest.approx(0.017)


def test_without_prices_a_run_costs_its_model_calls_only() -> None:
    got = run_costs(
        {"duration_s": 30.0, "llm_cost_usd": 0.25}, prices=None, target_name="a", target_type="rest"
    )
    assert got == {"cost_usd": 0.25}


def test_hosted_speech_without_a_price_is_marked_not_guessed() -> None:
    speech = MeteredSpeech(pool=None)  # type: ignore[arg-type]
    speech.tts_characters, speech.stt_seconds = {"openai": 2000}, {"openai": 120.0}
    priced = run_costs(
        {}, prices=Prices(tts_million_characters={"openai": 15}, stt_minute={"openai": 0.006}),
        target_name="a", target_type="voice", speech=speech,
    )  # fmt: skip
    assert priced["speech_cost_usd"] == pytest.approx(2000 * 15 / 1e6 + 2 * 0.006)
    assert "speech_unpriced" not in priced
    bare = run_costs({}, prices=Prices(), target_name="a", target_type="voice", speech=speech)
    assert (bare["speech_cost_usd"], bare["speech_unpriced"], bare["cost_usd"]) == (0.0, 1.0, 0.0)


def test_local_engines_cost_their_cpu_seconds_never_a_price_per_minute() -> None:
    speech = MeteredSpeech(pool=None)  # type: ignore[arg-type]
    speech.tts_characters, speech.stt_seconds = {"piper": 500}, {"whisper-base": 120.0, "whisper": 30.0}
    speech.cpu.add("piper", 0.5)
    speech.cpu.add("whisper-base", 2.0)
    speech.cpu.add("whisper", 0.25)
    priced = run_costs(
        {}, prices=Prices(local_speech_second=0.01, stt_minute={"openai": 0.006}),
        target_name="a", target_type="sip", speech=speech,
    )  # fmt: skip
    assert priced["local_speech_cpu_s"] == pytest.approx(2.75)
    assert priced["speech_cost_usd"] == pytest.approx(0.0275)
    assert "speech_unpriced" not in priced, "whisper-base is local: it has no price per minute to miss"
