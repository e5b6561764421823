"""Telephone line models (``line_quality``): band limits, codec, packet loss, jitter and clipping.

A ``LineModel`` is a documented, frozen parameter set; the presets ``pstn``, ``mobile_poor`` and
``voip_good`` are registered in ``line_models`` so more can plug in. ``LineBank`` runs one model
for many calls at once: every stage works on a (calls, samples) array of 20 ms frames, with each
call's state (filter memory, loss state, last frame, jitter buffer) carried across frames, so a
pool can batch the frames of a thousand calls into a handful of numpy operations. ``Line`` is the
single-call wrapper.

Stages, in the order a caller's voice meets them: soft clipping (a hot handset microphone),
band-pass (the channel), codec, packet loss with concealment (repeat the last frame with a fade,
then silence), jitter (a one-frame playout buffer that sometimes repeats a frame and later drops
one to catch up). Every random choice comes from one ``numpy.random.Generator`` per call, seeded
from that call's seed, so a call replays byte for byte whether it runs alone or in a bank.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from tamesu.registry import Registry

from .codec import AV_CODECS, AvCodecLoop, normalise_encoding, roundtrip_table
from .filters import BlockFilter, butterworth_sos
from .pcm import FRAME_MS, frame_samples, from_bytes, split_frames, to_bytes
from .resample import FrameResampler

__all__ = [
    "GilbertElliott",
    "Jitter",
    "Line",
    "LineBank",
    "LineModel",
    "MobilePoor",
    "Pstn",
    "SoftClip",
    "VoipGood",
    "get_line_model",
    "line_models",
]

_LINE_STREAM = 0x4C494E45
"""Mixed into each call's seed so the line's randomness is independent of other seeded parts."""

_BLOCK = 250
"""Frames of random numbers drawn per call at a time (5 s), so drawing costs nothing per frame."""


@dataclass(frozen=True)
class GilbertElliott:
    """Two-state packet loss: a good and a bad state, each with its own loss probability per frame.

    With ``p_good_to_bad`` 0 it is plain independent (Bernoulli) loss at ``loss_good``.
    """

    p_good_to_bad: float = 0.0
    p_bad_to_good: float = 1.0
    loss_good: float = 0.0
    loss_bad: float = 1.0

    @classmethod
    def bernoulli(cls, rate: float) -> GilbertElliott:
        return cls(loss_good=rate)

    @property
    def bad_fraction(self) -> float:
        total = self.p_good_to_bad + self.p_bad_to_good
        return self.p_good_to_bad / total if total else 0.0

    @property
    def mean_loss(self) -> float:
        """The long-run fraction of frames lost."""
        bad = self.bad_fraction
        return (1 - bad) * self.loss_good + bad * self.loss_bad


@dataclass(frozen=True)
class Jitter:
    """A one-frame jitter buffer: a late frame makes playout repeat the previous frame; later a frame is dropped."""

    late: float = 0.02
    """Chance per frame that a frame arrives late (playout repeats the previous frame and falls behind)."""
    catch_up: float = 0.25
    """Chance per frame, while behind, that the buffer drops a frame to catch up."""


@dataclass(frozen=True)
class SoftClip:
    """A hot microphone: ``ceiling * tanh(gain * x / ceiling)``, so loud syllables saturate smoothly."""

    gain_db: float = 10.0
    ceiling: float = 0.35


@dataclass(frozen=True)
class LineModel:
    """Every parameter of a line; subclasses are the named presets with documented defaults."""

    name: str = "custom"
    rate: int = 8000
    highpass_hz: float | None = None
    lowpass_hz: float | None = None
    filter_order: int = 4
    codec: str = "pcm16"
    """pcm16 (none), mulaw, alaw (vectorised), or opus / amr_nb (PyAV, per call)."""
    bitrate: int | None = None
    loss: GilbertElliott = field(default_factory=GilbertElliott)
    conceal_frames: int = 3
    """Lost frames faded out over this many frames (repeating the last good one), then silence."""
    jitter: Jitter | None = None
    clip: SoftClip | None = None

    def bank(self, n_calls: int, seeds: Sequence[int], *, rate: int | None = None) -> LineBank:
        """The processor of this model; a plug-in with different stages overrides this."""
        return LineBank(self, n_calls, seeds, rate=rate)


line_models: Registry[type[LineModel]] = Registry("line model")


@line_models.register("pstn")
@dataclass(frozen=True)
class Pstn(LineModel):
    """A landline through the phone network: 8 kHz, 300-3400 Hz (4th-order Butterworth each side),
    G.711 mu-law, 0.5% independent frame loss with concealment."""

    name: str = "pstn"
    rate: int = 8000
    highpass_hz: float | None = 300.0
    lowpass_hz: float | None = 3400.0
    codec: str = "mulaw"
    loss: GilbertElliott = field(default_factory=lambda: GilbertElliott.bernoulli(0.005))


@line_models.register("mobile_poor")
@dataclass(frozen=True)
class MobilePoor(LineModel):
    """A weak mobile signal reaching the agent over a G.711 trunk: narrowband, bursty loss
    (Gilbert-Elliott: bad spells of 4 frames on average, 70% lost in them; ~2.7% overall), jitter
    repeats and drops, and a clipping microphone (+10 dB into a -9 dBFS soft ceiling)."""

    name: str = "mobile_poor"
    rate: int = 8000
    highpass_hz: float | None = 300.0
    lowpass_hz: float | None = 3400.0
    codec: str = "mulaw"
    loss: GilbertElliott = field(
        default_factory=lambda: GilbertElliott(p_good_to_bad=0.01, p_bad_to_good=0.25, loss_bad=0.7)
    )
    jitter: Jitter | None = field(default_factory=Jitter)
    clip: SoftClip | None = field(default_factory=SoftClip)


@line_models.register("voip_good")
@dataclass(frozen=True)
class VoipGood(LineModel):
    """A good VoIP call: 16 kHz wideband (50-7000 Hz), Opus at 24 kbit/s, 0.2% independent loss."""

    name: str = "voip_good"
    rate: int = 16000
    highpass_hz: float | None = 50.0
    lowpass_hz: float | None = 7000.0
    codec: str = "opus"
    bitrate: int | None = 24000
    loss: GilbertElliott = field(default_factory=lambda: GilbertElliott.bernoulli(0.002))


def get_line_model(name: str, **overrides: Any) -> LineModel:
    """The preset called ``name`` (pstn, mobile_poor, voip_good, or a plug-in), with fields overridden."""
    model = line_models.get(name)()
    return replace(model, **overrides) if overrides else model


class LineBank:
    """One line model applied to ``n_calls`` calls in lockstep: ``process`` takes one frame per call.

    Frames are int16 (calls, samples) at ``rate`` (default the model's rate; any other rate is
    resampled in and out at a constant latency, ``latency_s``). A slot whose call ended can be
    given to a new call with ``reset``.
    """

    def __init__(
        self, model: LineModel, n_calls: int, seeds: Sequence[int], *, rate: int | None = None
    ) -> None:
        if len(seeds) != n_calls:
            raise ValueError(f"{n_calls} calls need {n_calls} seeds, got {len(seeds)}")
        self.model = model
        self.n_calls = n_calls
        self.rate = rate or model.rate
        self.frame = frame_samples(self.rate)
        inner = frame_samples(model.rate)
        self._inner = inner
        self._down = self._up = None
        if self.rate != model.rate:
            self._down = FrameResampler(self.rate, model.rate, self.frame, channels=n_calls)
            self._up = FrameResampler(model.rate, self.rate, inner, channels=n_calls)
        self.latency_s = (
            0.0 if self._down is None or self._up is None else self._down.latency_s + self._up.latency_s
        )
        sos = butterworth_sos(
            model.rate, highpass_hz=model.highpass_hz, lowpass_hz=model.lowpass_hz, order=model.filter_order
        )
        self._filter = BlockFilter(sos, inner, n_calls) if len(sos) else None
        self._av = model.codec in AV_CODECS
        plain = not self._av and normalise_encoding(model.codec) == "pcm16"
        self._table = None if self._av or plain else roundtrip_table(model.codec)
        self._rngs: list[np.random.Generator] = [np.random.default_rng() for _ in range(n_calls)]
        self._draws = np.zeros((_BLOCK, n_calls, 3))
        self._codecs: list[AvCodecLoop] = []
        self._bad = np.zeros(n_calls, dtype=bool)
        self._lost_run = np.zeros(n_calls, dtype=np.int32)
        self._last = np.zeros((n_calls, inner), dtype=np.float32)
        self._held = np.zeros((n_calls, inner), dtype=np.int16)
        self._prev = np.zeros((n_calls, inner), dtype=np.int16)
        self._behind = np.zeros(n_calls, dtype=bool)
        self._ramp = np.arange(inner, dtype=np.float32) / inner
        self._pos = np.zeros(n_calls, dtype=np.int64)
        self._pos_same: int | None = 0
        self._calls = np.arange(n_calls)
        self._mute = np.zeros(n_calls, dtype=np.int64)
        self.frames = np.zeros(n_calls, dtype=np.int64)
        self.lost = np.zeros(n_calls, dtype=np.int64)
        self.lost_now = np.zeros(n_calls, dtype=bool)
        """Which calls lost their frame in the last ``process``."""
        self.repeated = np.zeros(n_calls, dtype=np.int64)
        self.dropped = np.zeros(n_calls, dtype=np.int64)
        for i, seed in enumerate(seeds):
            self.reset(i, seed)
        self._pos_same = 0
        self._mute[:] = 0

    def reset(self, index: int, seed: int) -> None:
        """Start a fresh call in slot ``index``: clear its state and reseed its generator.

        With rate conversion the resamplers still hold the previous call's last ``latency_s``, so
        the slot's output is silenced for that long rather than leak one call into another.
        """
        if self._up is not None:
            self._mute[index] = int(np.ceil(self.latency_s / 0.02)) + 1
        self._rngs[index] = np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, _LINE_STREAM])
        self._draws[:, index] = self._rngs[index].random((_BLOCK, 3))
        if self._pos_same is not None:
            self._pos[:] = self._pos_same
        self._pos[index] = 0
        self._pos_same = int(self._pos[0]) if (self._pos == self._pos[0]).all() else None
        if self._filter is not None:
            self._filter.reset(index)
        if self._av:
            loop = AvCodecLoop(self.model.codec, self.model.rate, self._inner, bitrate=self.model.bitrate)
            if index < len(self._codecs):
                self._codecs[index] = loop
            else:
                self._codecs.append(loop)
        for arr in (self._bad, self._lost_run, self._last, self._held, self._prev, self._behind):
            arr[index] = 0
        for counter in (self.frames, self.lost, self.repeated, self.dropped):
            counter[index] = 0

    def _uniforms(self) -> np.ndarray:
        """This frame's three uniforms per call, refilling a call's block from its own generator."""
        if self._pos_same is not None:
            row = self._pos_same
            if row == _BLOCK:
                for i, rng in enumerate(self._rngs):
                    self._draws[:, i] = rng.random((_BLOCK, 3))
                row = 0
            self._pos_same = row + 1
            return self._draws[row]
        spent = self._pos == _BLOCK
        for call in np.flatnonzero(spent):
            self._draws[:, call] = self._rngs[call].random((_BLOCK, 3))
        self._pos[spent] = 0
        u = self._draws[self._pos, self._calls]
        self._pos += 1
        return u

    def process(self, frames: np.ndarray) -> np.ndarray:
        """One int16 frame per call, (calls, samples) -> the same shape after the line."""
        if frames.shape != (self.n_calls, self.frame):
            raise ValueError(f"expected frames of shape {(self.n_calls, self.frame)}, got {frames.shape}")
        m = self.model
        x = frames if self._down is None else self._down.process(frames)
        f = x.astype(np.float32) * np.float32(1 / 32768)
        if m.clip is not None:
            gain = np.float32(10 ** (m.clip.gain_db / 20) / m.clip.ceiling)
            f = np.float32(m.clip.ceiling) * np.tanh(f * gain)
        if self._filter is not None:
            f = self._filter.process(f)
        pcm = np.clip(np.rint(f * np.float32(32768)), -32768, 32767).astype(np.int16)
        if self._table is not None:
            pcm = self._table[pcm.view(np.uint16)]
        elif self._av:
            pcm = np.stack([loop.process(row) for loop, row in zip(self._codecs, pcm)])
        u = self._uniforms()
        out = self._lose(pcm, u)
        if m.jitter is not None:
            out = self._jitter(out, u[:, 2])
        self.frames += 1
        if self._up is None:
            return out
        out = self._up.process(out)
        if self._mute.any():
            out[self._mute > 0] = 0
            self._mute = np.maximum(self._mute - 1, 0)
        return out

    def _lose(self, pcm: np.ndarray, u: np.ndarray) -> np.ndarray:
        loss = self.model.loss
        self._bad = np.where(self._bad, u[:, 0] >= loss.p_bad_to_good, u[:, 0] < loss.p_good_to_bad)
        lost = u[:, 1] < np.where(self._bad, loss.loss_bad, loss.loss_good)
        self.lost_now = lost
        if not lost.any():
            self._lost_run[:] = 0
            self._last = pcm.astype(np.float32)
            return pcm
        self.lost += lost
        self._lost_run = np.where(lost, self._lost_run + 1, 0)
        k = self._lost_run[lost].astype(np.float32)
        n = np.float32(max(self.model.conceal_frames, 1))
        start = np.clip(1 - (k - 1) / n, 0, 1)[:, None]
        end = np.clip(1 - k / n, 0, 1)[:, None]
        gains = start + (end - start) * self._ramp[None, :]
        out = pcm.copy()
        out[lost] = np.rint(self._last[lost] * gains).astype(np.int16)
        kept = ~lost
        self._last[kept] = pcm[kept]
        return out

    def _jitter(self, pcm: np.ndarray, u: np.ndarray) -> np.ndarray:
        jit = self.model.jitter
        assert jit is not None
        late = ~self._behind & (u < jit.late)
        if not late.any() and not self._behind.any():
            self._prev = pcm
            return pcm
        catch = self._behind & (u < jit.catch_up)
        wait = self._behind & ~catch
        out = pcm.copy()
        out[late] = self._prev[late]
        out[wait] = self._held[wait]
        hold = late | wait
        self._held[hold] = pcm[hold]
        self._behind = hold
        self.repeated += late
        self.dropped += catch
        self._prev = out
        return out


class Line:
    """One call's line: frames (int16 arrays or PCM16 bytes) in, the same out."""

    def __init__(self, model: LineModel | str, seed: int, *, rate: int | None = None) -> None:
        self.model = get_line_model(model) if isinstance(model, str) else model
        self.bank = self.model.bank(1, [seed], rate=rate)
        self.rate = self.bank.rate
        self.frame = self.bank.frame

    def process(self, frame: np.ndarray | bytes) -> np.ndarray | bytes:
        """One 20 ms frame through the line."""
        if isinstance(frame, (bytes, bytearray)):
            return to_bytes(self.bank.process(from_bytes(frame)[None, :])[0])
        return self.bank.process(frame[None, :])[0]

    def process_signal(self, samples: np.ndarray) -> np.ndarray:
        """A whole int16 signal, frame by frame, realigned so the output lines up with the input.

        The resampling delay (``latency_s``) is flushed and trimmed; codec delay (Opus, AMR) is not.
        """
        delay = round(self.bank.latency_s * self.rate)
        padded = np.concatenate([samples, np.zeros(delay, dtype=np.int16)])
        frames = split_frames(padded, self.rate, ms=FRAME_MS)
        out = [self.bank.process(row[None, :])[0] for row in frames]
        joined = np.concatenate(out) if out else np.zeros(0, np.int16)
        return joined[delay : delay + len(samples)]
