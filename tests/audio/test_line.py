from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest

from tamesu.audio import pcm, synth
from tamesu.audio.phone_line import (
    GilbertElliott,
    Line,
    LineBank,
    LineModel,
    MobilePoor,
    Pstn,
    get_line_model,
    line_models,
)

pytestmark = pytest.mark.unit

NO_LOSS = GilbertElliott()


def _gain_db(model: LineModel, hz: float, rate: int | None = None) -> float:
    rate = rate or model.rate
    x = synth.tone(hz, 1.0, rate, dbfs=-16)
    y = Line(model, 1, rate=rate).process_signal(x)
    skip = len(x) // 4
    return float(pcm.dbfs(y[skip:])) - float(pcm.dbfs(x[skip:]))


def test_pstn_band_limits() -> None:
    model = replace(Pstn(), loss=NO_LOSS)
    assert abs(_gain_db(model, 1000)) < 0.5
    assert _gain_db(model, 200) < -12
    assert _gain_db(model, 3800) < -30


def test_pstn_at_16k_passes_speech_band_and_drops_the_rest() -> None:
    model = replace(Pstn(), loss=NO_LOSS)
    assert abs(_gain_db(model, 1000, 16000)) < 0.5
    assert _gain_db(model, 5000, 16000) < -40
    assert Line(model, 1, rate=16000).bank.latency_s > 0


def test_registry_and_overrides() -> None:
    assert {"pstn", "mobile_poor", "voip_good"} <= set(line_models.names())
    model = get_line_model("mobile_poor", conceal_frames=5)
    assert isinstance(model, MobilePoor) and model.conceal_frames == 5 and model.rate == 8000
    assert get_line_model("voip_good").codec == "opus"
    with pytest.raises(KeyError, match="pstn"):
        get_line_model("dialup")


def test_a_plugged_in_model_runs() -> None:
    @line_models.register("tin_can")
    @dataclass(frozen=True)
    class TinCan(LineModel):
        name: str = "tin_can"
        rate: int = 8000
        highpass_hz: float | None = 800.0
        lowpass_hz: float | None = 2000.0
        codec: str = "alaw"

    x = synth.speech_like(0.5, 8000)
    y = Line("tin_can", 3).process_signal(x)
    assert y.shape == x.shape and y.any()


def _run(model: LineModel, n_calls: int, frames: int, seed0: int = 0) -> np.ndarray:
    bank = LineBank(model, n_calls, list(range(seed0, seed0 + n_calls)))
    silence = np.zeros((n_calls, bank.frame), np.int16)
    lost = np.zeros((frames, n_calls), bool)
    for k in range(frames):
        bank.process(silence)
        lost[k] = bank.lost_now
    assert np.array_equal(lost.sum(axis=0), bank.lost)
    return lost


def _mean_burst(lost: np.ndarray) -> float:
    runs = []
    for col in lost.T:
        edges = np.diff(np.concatenate([[0], col.astype(int), [0]]))
        runs += list(np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1))
    return float(np.mean(runs))


def test_loss_rates_over_long_runs() -> None:
    pstn = _run(Pstn(), 120, 500)
    assert pstn.mean() == pytest.approx(Pstn().loss.mean_loss, rel=0.15)
    assert _mean_burst(pstn) < 1.1
    mobile_model = MobilePoor()
    mobile = _run(mobile_model, 120, 500)
    assert mobile_model.loss.mean_loss == pytest.approx(0.0269, abs=0.001)
    assert mobile.mean() == pytest.approx(mobile_model.loss.mean_loss, rel=0.15)
    assert _mean_burst(mobile) > 1.8


def test_same_seed_same_bytes_alone_or_in_a_bank() -> None:
    x = synth.speech_like(3.0, 8000, seed=4)
    model = MobilePoor()
    a = pcm.to_bytes(Line(model, 7).process_signal(x))
    b = pcm.to_bytes(Line(model, 7).process_signal(x))
    assert a == b
    frames = pcm.split_frames(x, 8000)
    bank = LineBank(model, 3, [1, 7, 9])
    out = [bank.process(np.stack([f, f, f]))[1].copy() for f in frames]
    assert pcm.to_bytes(np.concatenate(out)) == a


def test_different_seeds_lose_different_frames() -> None:
    model = replace(Pstn(), loss=GilbertElliott.bernoulli(0.05))
    lost = _run(model, 2, 400)
    assert lost[:, 0].sum() > 5 and lost[:, 1].sum() > 5
    assert not np.array_equal(lost[:, 0], lost[:, 1])


def test_reset_replays_a_slot() -> None:
    model = replace(Pstn(), loss=GilbertElliott.bernoulli(0.1))
    x = pcm.split_frames(synth.speech_like(1.0, 8000), 8000)
    bank = LineBank(model, 2, [5, 6])
    first = [bank.process(np.stack([f, f]))[0].copy() for f in x]
    bank.reset(0, 5)
    again = [bank.process(np.stack([f, f]))[0].copy() for f in x]
    assert np.array_equal(np.concatenate(first), np.concatenate(again))


def test_concealment_repeats_with_a_fade_then_silence() -> None:
    model = replace(
        Pstn(), loss=GilbertElliott.bernoulli(0.5), highpass_hz=None, lowpass_hz=None, codec="pcm16"
    )
    bank = LineBank(model, 1, [3])
    x = pcm.split_frames(synth.tone(1004, 4.0, 8000, dbfs=-10), 8000)
    outs, lost = [], []
    for f in x:
        outs.append(bank.process(f[None, :])[0].copy())
        lost.append(bool(bank.lost_now[0]))
    ramp = np.arange(160) / 160
    checked_first = checked_silent = 0
    run = 0
    for k in range(1, len(x)):
        run = run + 1 if lost[k] else 0
        if run == 1 and not lost[k - 1]:
            expected = np.rint(x[k - 1] * (1 - ramp / 3)).astype(int)
            assert np.abs(outs[k].astype(int) - expected).max() <= 1
            checked_first += 1
        if run > 3:
            assert not outs[k].any()
            checked_silent += 1
        if not lost[k]:
            assert np.array_equal(outs[k], x[k])
    assert checked_first > 10 and checked_silent > 0


def test_jitter_repeats_and_drops_but_keeps_the_timeline() -> None:
    model = replace(MobilePoor(), loss=NO_LOSS, clip=None)
    bank = LineBank(model, 50, list(range(50)))
    frames = np.zeros((50, 160), np.int16)
    for _ in range(500):
        out = bank.process(frames)
        assert out.shape == frames.shape
    assert bank.repeated.sum() > 100
    assert abs(int(bank.repeated.sum()) - int(bank.dropped.sum())) <= 50
    assert (bank.frames == 500).all()


def test_soft_clip_limits_peaks() -> None:
    model = replace(MobilePoor(), loss=NO_LOSS, jitter=None, highpass_hz=None, lowpass_hz=None, codec="pcm16")
    x = synth.tone(500, 0.5, 8000, dbfs=-6)
    y = Line(model, 1).process_signal(x)
    assert np.abs(y).max() <= 0.35 * 32768 + 1
    quiet = synth.tone(500, 0.5, 8000, dbfs=-50)
    assert abs(float(pcm.dbfs(Line(model, 1).process_signal(quiet))) - (-40)) < 0.5


def test_voip_good_carries_a_wideband_tone() -> None:
    model = replace(get_line_model("voip_good"), loss=NO_LOSS)
    assert abs(_gain_db(model, 5000)) < 1.5


def test_bytes_in_bytes_out_and_shape_checks() -> None:
    line = Line("pstn", 1)
    frame = synth.speech_like(0.02, 8000)
    out = line.process(pcm.to_bytes(frame))
    assert isinstance(out, bytes) and len(out) == 320
    with pytest.raises(ValueError):
        line.bank.process(np.zeros((1, 100), np.int16))
    with pytest.raises(ValueError):
        LineBank(Pstn(), 2, [1])


def test_a_reused_slot_does_not_hear_the_previous_call() -> None:
    model = replace(Pstn(), loss=NO_LOSS)
    bank = LineBank(model, 2, [1, 2], rate=16000)
    loud = synth.tone(1000, 1.0, 16000, dbfs=-10).reshape(-1, 320)
    for frame in loud:
        bank.process(np.stack([frame, frame]))
    bank.reset(0, 3)
    quiet = np.zeros(320, np.int16)
    after = [bank.process(np.stack([quiet, loud[0]]))[0].copy() for _ in range(20)]
    assert not np.concatenate(after).any()
