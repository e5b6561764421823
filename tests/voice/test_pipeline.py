"""The call's stages, stepped frame by frame without sockets (the pump on virtual time)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tamesu.actors.actor import roundtrip
from tamesu.audio import synth
from tamesu.audio.codec import ulaw_decode
from tamesu.audio.dtmf import detect_dtmf
from tamesu.audio.timing import Segment
from tamesu.kernel.messages import AgentSpeech, AudioBatch, CallerSpoke, MarksPlayed, Message, Tick
from tamesu.voice import (
    BargeIn,
    CallAudio,
    CallRecording,
    CallTimeline,
    FramePump,
    Playout,
    TurnTiming,
    make_utterance,
    read_recording,
    render_dtmf,
    speech_spans,
    voice_metrics,
    wer,
)

from .peers import vowel

pytestmark = pytest.mark.unit


def test_playout_plays_in_order_and_marks_fall_due_when_played() -> None:
    play = Playout(160)
    play.write(np.arange(100, dtype=np.int16))
    play.mark("a")
    play.write(np.arange(100, 300, dtype=np.int16))
    play.mark("b")
    out = np.zeros(160, np.int16)
    assert play.read_into(out) == 160 and out.tolist() == list(range(160))
    assert play.due_marks() == ["a"]
    out[:] = 0
    assert play.read_into(out) == 140 and out[:140].tolist() == list(range(160, 300)) and not out[140:].any()
    assert play.due_marks() == ["b"] and play.buffered == 0
    play.mark("now")
    assert play.due_marks() == ["now"], "a mark with nothing queued is due at once"
    play.write(np.ones(1000, np.int16))
    play.mark("c")
    assert play.clear() == ["c"] and play.buffered == 0 and play.consumed == play.written


def test_speech_spans_and_levelling() -> None:
    rate = 16000
    sig = np.concatenate(
        [synth.silence(0.3, rate), vowel(0.5, rate), synth.silence(0.5, rate), vowel(0.4, rate)]
    )
    spans = speech_spans(sig, rate)
    assert len(spans) == 2
    assert spans[0][0] == pytest.approx(0.3, abs=0.011) and spans[0][1] == pytest.approx(0.8, abs=0.011)
    assert spans[1][0] == pytest.approx(1.3, abs=0.011) and spans[1][1] == pytest.approx(1.7, abs=0.011)
    quiet = (vowel(1.0, rate, dbfs=-45)).astype(np.int16)
    utt = make_utterance(quiet, rate, text="hi")
    level = 20 * np.log10(np.sqrt(np.mean((utt.samples.astype(np.float64) / 32768) ** 2)))
    assert level == pytest.approx(-26, abs=0.5) and not utt.samples.flags.writeable
    assert utt.speech_end == pytest.approx(1.0, abs=0.011)


def test_an_utterance_at_a_lower_level_keeps_its_spans_and_the_shared_one_is_untouched() -> None:
    from tamesu.voice.speech import at_level

    loud = make_utterance(vowel(0.5, 8000), 8000, text="hi")
    whisper = at_level(loud, -20)

    def dbfs(x: np.ndarray) -> float:
        return float(20 * np.log10(np.sqrt(np.mean((x.astype(np.float64) / 32768) ** 2))))

    assert dbfs(whisper.samples) == pytest.approx(dbfs(loud.samples) - 20, abs=0.1)
    assert dbfs(loud.samples) == pytest.approx(-26, abs=0.5), "the cached utterance keeps its level"
    assert whisper.spans == loud.spans and whisper.text == "hi" and not whisper.samples.flags.writeable


def test_dtmf_utterance_holds_the_digits() -> None:
    utt = render_dtmf("12#", 8000)
    assert detect_dtmf(np.asarray(utt.samples), 8000) == "12#" and utt.kind == "dtmf"


def _spoken(reports: list[Message]) -> list[CallerSpoke]:
    return [m for m in reports if isinstance(m, CallerSpoke)]


@pytest.mark.parametrize("boundary", [None, roundtrip], ids=["in-process", "encoded"])
async def test_the_pump_sends_every_sample_on_time_and_reports_what_was_said(boundary: Any) -> None:
    pump = FramePump(ticker=False, boundary=boundary)
    sent: list[bytes] = []
    reports: list[Message] = []
    call = CallAudio(rate=8000, encoding="mulaw", send=sent.append, report=reports.append)
    pump.attach(call, t0=10.0)
    pump.tick()
    utt = make_utterance(vowel(0.5, 8000), 8000, level=False)
    call.say(utt)
    for _ in range(30):
        pump.tick()
    [said] = _spoken(reports)
    assert said.start == pytest.approx(10.02) and not said.stopped and said.call == call.slot
    assert said.spans[0][0] == pytest.approx(10.02, abs=0.011) and said.speech_end == pytest.approx(
        10.52, abs=0.011
    )
    assert all(len(frame) == 160 for frame in sent) and len(sent) == 31
    decoded = ulaw_decode(b"".join(sent[1:]))
    assert not ulaw_decode(sent[0]).any(), "silence before the caller speaks"
    reference = ulaw_decode(np.frombuffer(b"".join(sent[1:]), np.uint8))
    assert np.array_equal(decoded, reference)
    assert np.corrcoef(decoded[:4000].astype(float), utt.samples[:4000].astype(float))[0, 1] > 0.99
    pump.detach(call)
    assert pump.calls == 0


async def test_hush_cuts_the_caller_off() -> None:
    pump = FramePump(ticker=False)
    reports: list[Message] = []
    call = CallAudio(rate=16000, send=lambda b: None, report=reports.append)
    pump.attach(call, t0=0.0)
    call.say(make_utterance(vowel(2.0, 16000), 16000))
    call.say(make_utterance(vowel(1.0, 16000), 16000))
    for _ in range(10):
        pump.tick()
    call.hush()
    cut, dropped = _spoken(reports)
    assert cut.stopped and cut.speech_end == pytest.approx(0.2, abs=0.011) and not call.talking
    assert dropped.stopped and dropped.spans == []


async def test_calls_share_lanes_and_lines_keep_their_own_state() -> None:
    pump = FramePump(ticker=False)
    outs: list[list[bytes]] = [[] for _ in range(10)]
    calls = [
        CallAudio(rate=8000, encoding="pcm16", line="pstn", seed=i, send=outs[i].append) for i in range(10)
    ]
    for c in calls:
        pump.attach(c, t0=0.0)
    lanes = pump.lanes[(8000, "pcm16", "pstn")]
    assert [lane.capacity for lane in lanes] == [8, 32]
    tone = make_utterance(synth.tone(1000, 0.4, 8000, dbfs=-20), 8000, level=False)
    for c in calls:
        c.say(tone)
    for _ in range(25):
        pump.tick()
    first = np.frombuffer(b"".join(outs[0]), "<i2")
    assert len(first) == 25 * 160
    assert 20 * np.log10(np.sqrt(np.mean((first[800:2400] / 32768.0) ** 2))) == pytest.approx(-20, abs=2)
    low = synth.tone(100, 0.4, 8000, dbfs=-20)
    filtered: list[bytes] = []
    lone = CallAudio(rate=8000, encoding="pcm16", line="pstn", seed=99, send=filtered.append)
    pump.attach(lone, t0=0.0)
    lone.say(make_utterance(low, 8000, level=False))
    for _ in range(25):
        pump.tick()
    hum = np.frombuffer(b"".join(filtered), "<i2")[800:2400].astype(np.float64)
    assert np.sqrt(np.mean(hum**2)) < 0.1 * np.sqrt(np.mean(low.astype(np.float64) ** 2)), (
        "the line cuts 100 Hz"
    )


async def test_the_stages_exchange_one_batch_per_tick_per_lane_whatever_the_calls() -> None:
    seen: list[Message] = []

    def note(msg: Message) -> Message:
        seen.append(msg)
        return roundtrip(msg)

    pump = FramePump(ticker=False, boundary=note)
    few = [CallAudio(rate=8000, encoding="mulaw", line="pstn", seed=i, send=lambda b: None) for i in range(3)]
    many = [CallAudio(rate=16000, send=lambda b: None) for _ in range(30)]
    for c in few + many:
        pump.attach(c, t0=0.0)
    assert len(pump.lanes[(8000, "mulaw", "pstn")]) == 1 and len(pump.lanes[(16000, "pcm16", None)]) == 2
    pump.tick()
    batches = [m for m in seen if isinstance(m, AudioBatch)]
    per_lane = {"line": 1, "transport": 1, "listener": 1, "recorder": 2}
    assert len(batches) == 3 * sum(per_lane.values()), "one batch per stage hop per lane, none per call"
    assert {len(b.calls) for b in batches} == {3, 8, 22}
    assert sum(isinstance(m, Tick) for m in seen) == 3


@pytest.mark.parametrize("rate", [16000, 24000])
@pytest.mark.parametrize("boundary", [None, roundtrip], ids=["in-process", "encoded"])
async def test_agent_audio_is_played_and_its_speech_found(rate: int, boundary: Any) -> None:
    pump = FramePump(ticker=False, boundary=boundary)
    reports: list[Message] = []
    ear = _Ear()
    call = CallAudio(rate=rate, send=lambda b: None, report=reports.append, ear=ear)
    pump.attach(call, t0=5.0)
    for _ in range(15):
        pump.tick()
    call.play(vowel(0.6, rate))
    call.mark("done")
    for _ in range(60):
        pump.tick()
    speech = [m for m in reports if isinstance(m, AgentSpeech)]
    assert [m.kind for m in speech] == ["speech_start", "speech_end"]
    assert speech[0].at == pytest.approx(5.3, abs=0.021)
    assert speech[1].at == pytest.approx(5.9, abs=0.15)
    assert [m.names for m in reports if isinstance(m, MarksPlayed)] == [["done"]]
    played = np.concatenate(ear.frames)
    n = rate // 50
    assert len(played) == 75 * n and np.array_equal(
        played[15 * n : 15 * n + int(0.6 * rate)], vowel(0.6, rate)
    )
    assert ear.times[15] == pytest.approx(5.3)


class _Ear:
    """A listener's ear that keeps every frame the agent played, and when."""

    def __init__(self) -> None:
        self.frames: list[np.ndarray] = []
        self.times: list[float] = []

    def frame(self, agent: np.ndarray, at: float) -> str:
        self.frames.append(agent.copy())
        self.times.append(at)
        return ""


async def test_audio_the_agent_sent_before_the_call_joined_its_lane_is_played() -> None:
    pump = FramePump(ticker=False)
    reports: list[Message] = []
    ear = _Ear()
    call = CallAudio(rate=16000, send=lambda b: None, report=reports.append, ear=ear)
    call.play(vowel(0.1, 16000))
    call.mark("greeting")
    pump.attach(call, t0=0.0)
    for _ in range(6):
        pump.tick()
    played = np.concatenate(ear.frames)
    assert np.array_equal(played[:1600], vowel(0.1, 16000)) and not played[1600:].any()
    assert [m.names for m in reports if isinstance(m, MarksPlayed)] == [["greeting"]]


async def test_a_clear_drops_the_queued_audio_and_every_pending_mark_is_played() -> None:
    pump = FramePump(ticker=False)
    reports: list[Message] = []
    call = CallAudio(rate=8000, send=lambda b: None, report=reports.append)
    pump.attach(call, t0=0.0)
    call.play(vowel(1.0, 8000))
    call.mark("a")
    call.play(vowel(1.0, 8000))
    call.mark("b")
    pump.tick()
    assert call.buffered == 2 * 8000 - 160
    call.clear()
    assert [m.names for m in reports if isinstance(m, MarksPlayed)] == [["a", "b"]] and call.buffered == 0


def test_voice_metrics_from_a_timeline() -> None:
    tl = CallTimeline(
        started=0.0,
        ended=20.0,
        caller=[Segment(1.0, 3.0), Segment(8.0, 9.0)],
        agent=[Segment(3.5, 5.0), Segment(5.8, 8.4), Segment(9.8, 11.0)],
        turns=[
            TurnTiming(
                index=1, caller_start=1.0, caller_end=3.0, first_audio_rx=3.45, first_audio_at=3.5, end_at=7.0
            ),
            TurnTiming(
                index=2, caller_start=8.0, caller_end=9.0, first_audio_rx=9.7, first_audio_at=9.8, end_at=12.0
            ),
        ],
        barge_ins=[BargeIn(start=8.0, caller_end=9.0, quiet_at=8.4)],
        transcript_pairs=[("returns within thirty days", "returns within 30 weeks")],  # one word of four
    )
    m = voice_metrics(tl)
    assert m["turn_latency_ms_p50"] == pytest.approx(650) and m["turn_latency_ms_max"] == pytest.approx(800)
    assert m["time_to_first_audio_ms_max"] == pytest.approx(700)
    assert m["barge_ins"] == 1 and m["interruptions"] == 1 and m["barge_in_ms_p95"] == pytest.approx(400)
    assert m["talk_over_ms"] == pytest.approx(400)
    assert m["silence_ms_max"] == pytest.approx(800)
    assert (
        m["call_duration_s"] == 20 and m["caller_speech_s"] == 3 and m["agent_speech_s"] == pytest.approx(5.3)
    )
    assert m["wer_agent_transcript"] == pytest.approx(0.25)
    slow = CallTimeline(barge_ins=[BargeIn(start=1.0, caller_end=2.0, quiet_at=3.0)])
    assert voice_metrics(slow)["interruptions"] == 0


def test_word_error_rate() -> None:
    assert wer("returns are accepted within 30 days", "Returns are accepted within 30 days.") == 0
    assert wer("a b c d", "a x c") == pytest.approx(0.5)
    assert wer("", "") == 0 and wer("", "extra") == 1
    assert wer("returns within thirty days", "Returns within 30 days.") == 0  # numbers as a person hears them
    assert wer("your code is four eight one five", "Your code is 4815.") == 0  # digit by digit or grouped
    assert wer("a refund of forty nine dollars", "A refund of $49.") == 0


def test_recording_is_stereo_caller_left_agent_right(tmp_path: Path) -> None:
    rec = CallRecording(tmp_path / "r" / "call.wav", 8000)
    for k in range(120):
        rec.write(np.full(160, k, np.int16), np.full(160, -k, np.int16))
    rec.close()
    rec.close()
    rate, caller, agent = read_recording(tmp_path / "r" / "call.wav")
    assert rate == 8000 and len(caller) == 120 * 160 and rec.seconds == pytest.approx(2.4)
    assert caller[160 * 7] == 7 and agent[160 * 7] == -7


async def test_one_shared_pump_per_event_loop() -> None:
    stepped = FramePump(ticker=False)
    stepped.attach(CallAudio(rate=8000, send=lambda b: None), t0=0.0)
    assert stepped._task is None
    shared = FramePump.shared()
    assert shared is FramePump.shared() and shared is not stepped
    other: list[FramePump] = []
    await asyncio.to_thread(lambda: other.append(asyncio.run(_shared())))
    assert other[0] is not shared


async def _shared() -> FramePump:
    return FramePump.shared()


async def test_a_failing_callback_does_not_stop_the_other_calls() -> None:
    pump = FramePump(ticker=False)
    good: list[bytes] = []

    def broken(_: bytes) -> None:
        raise RuntimeError("socket gone")

    pump.attach(CallAudio(rate=8000, line="pstn", send=broken), t0=0.0)
    pump.attach(CallAudio(rate=16000, send=good.append), t0=0.0)
    for _ in range(3):
        pump.tick()
    assert len(good) == 3 and pump.failures[-1] == "RuntimeError: socket gone"
