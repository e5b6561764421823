"""What the caller says, as audio ready for the line: TTS at the wire's rate, levelled, with its speech spans.

A persona's line is synthesised once per speech pool (the run's services hold the pool: the
process's own engines, or engine actors on other Ray nodes), converted to the call's rate, brought to the telephony nominal level (-26 dBFS active speech, the level the noise mixer
assumes) and measured: the spans where speech is active, so the caller's end of speech is known to
the sample instead of guessed by a VAD. The result is an immutable ``Utterance`` shared by every
call that says the same line at the same rate (the pre-rendered path of a load test).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tamesu.audio.stt import Transcription
    from tamesu.speech_pool import SpeechPool

__all__ = [
    "NOMINAL_DBFS",
    "Utterance",
    "at_level",
    "make_utterance",
    "render_dtmf",
    "render_speech",
    "speech_spans",
    "transcribe",
]

NOMINAL_DBFS = -26.0
"""Active speech level the caller's voice is brought to (ITU-T P.56 nominal for telephony)."""
_PEAK_LIMIT = 10 ** (-1.0 / 20)
_FRAME_S = 0.02
_CACHE_ITEMS = 512


@dataclass(frozen=True, eq=False)
class Utterance:
    """int16 samples at ``rate`` (read-only) and the active speech spans in seconds from its start."""

    samples: np.ndarray
    rate: int
    spans: tuple[tuple[float, float], ...]
    text: str = ""
    kind: str = "speech"
    """speech or dtmf."""

    @property
    def duration(self) -> float:
        return len(self.samples) / self.rate

    @property
    def speech_start(self) -> float:
        return self.spans[0][0] if self.spans else 0.0

    @property
    def speech_end(self) -> float:
        return self.spans[-1][1] if self.spans else 0.0


def speech_spans(
    samples: np.ndarray, rate: int, *, floor_dbfs: float = -50.0, range_db: float = 40.0, gap_s: float = 0.3
) -> tuple[tuple[float, float], ...]:
    """Spans of 10 ms blocks within ``range_db`` of the loudest and above ``floor_dbfs``; gaps under ``gap_s`` joined.

    Energy on clean synthesised speech is exact where a VAD would add its own hangover, so the
    caller's end of speech (what turn latency counts from) is the last audible block.
    """
    block = max(1, rate // 100)
    count = len(samples) // block
    if count == 0:
        return ()
    x = samples[: count * block].astype(np.float32).reshape(count, block) / 32768.0
    power = np.mean(x * x, axis=1)
    with np.errstate(divide="ignore"):
        level = 10 * np.log10(power + 1e-20)
    active = (level > floor_dbfs) & (level > float(np.max(level)) - range_db)
    spans: list[list[float]] = []
    for i in np.flatnonzero(active).tolist():
        start, end = i * block / rate, (i + 1) * block / rate
        if spans and start - spans[-1][1] < gap_s:
            spans[-1][1] = end
        else:
            spans.append([start, end])
    return tuple((round(float(a), 4), round(float(b), 4)) for a, b in spans)


def make_utterance(
    samples: np.ndarray, rate: int, *, text: str = "", kind: str = "speech", level: bool = True
) -> Utterance:
    """An ``Utterance`` of int16 samples; ``level`` brings active speech to ``NOMINAL_DBFS`` (never clipping)."""
    x = np.asarray(samples, dtype=np.int16)
    spans = speech_spans(x, rate)
    if level and spans:
        f = x.astype(np.float32) / 32768.0
        mask = np.zeros(len(f), dtype=bool)
        for a, b in spans:
            mask[int(a * rate) : int(b * rate)] = True
        active = f[mask]
        rms = float(np.sqrt(np.mean(active.astype(np.float64) ** 2))) if len(active) else 0.0
        peak = float(np.max(np.abs(f))) if len(f) else 0.0
        if rms > 0 and peak > 0:
            gain = min(10 ** (NOMINAL_DBFS / 20) / rms, _PEAK_LIMIT / peak)
            x = np.clip(np.rint(f * gain * 32768.0), -32768, 32767).astype(np.int16)
    x = x.copy()
    x.flags.writeable = False
    return Utterance(x, rate, spans, text=text, kind=kind)


def at_level(utterance: Utterance, level_db: float) -> Utterance:
    """The same utterance ``level_db`` from its level (-20: a whisper), its spans kept as measured at
    the normal level (never louder than full scale). A new utterance: the cached one is shared."""
    f = utterance.samples.astype(np.float32) * np.float32(10 ** (level_db / 20))
    x = np.clip(np.rint(f), -32768, 32767).astype(np.int16)
    x.flags.writeable = False
    return replace(utterance, samples=x)


_caches: weakref.WeakKeyDictionary[Any, OrderedDict[tuple[Any, ...], Utterance]] = weakref.WeakKeyDictionary()
"""The utterances each speech pool made, the most recently used last."""


async def render_speech(
    text: str,
    rate: int,
    *,
    pool: SpeechPool | None = None,
    voice: str | None = None,
    language: str | None = None,
    engine: str | None = None,
) -> Utterance:
    """``text`` in the persona's voice at ``rate``, synthesised by ``pool`` (None: this process's
    own engines); cached per pool and (engine, voice, language, text, rate). ``engine`` forces a
    TTS engine by name; otherwise the persona voice decides.
    """
    from tamesu.speech_pool import local_speech_pool

    pool = pool or local_speech_pool()
    owner = getattr(pool, "shared", pool)  # a run's metered view shares its pool's cache
    cache = _caches.get(owner)
    if cache is None:
        cache = _caches[owner] = OrderedDict()
    key = (engine, voice, language, text, rate)
    hit = cache.get(key)
    if hit is not None:
        cache.move_to_end(key)
        return hit
    audio = await pool.synthesize(text, voice=voice, language=language, engine=engine)
    samples = audio.resample(rate).samples if len(audio) else np.zeros(0, np.int16)
    utt = make_utterance(samples, rate, text=text)
    cache[key] = utt
    while len(cache) > _CACHE_ITEMS:
        cache.popitem(last=False)
    return utt


def render_dtmf(digits: str, rate: int) -> Utterance:
    """Keypad tones (80 ms each, 80 ms apart) at ``rate``, as the caller's handset plays them in-band."""
    from tamesu.audio.dtmf import dtmf_tones

    tones = dtmf_tones(digits, rate)
    return make_utterance(tones, rate, text=digits, kind="dtmf", level=False)


async def transcribe(
    samples: np.ndarray,
    rate: int,
    *,
    pool: SpeechPool | None = None,
    language: str | None,
    engine: str | None = None,
) -> Transcription:
    """What the agent said in ``samples``, heard by ``pool`` (None: this process's own engines)."""
    from tamesu.audio.tts import Audio
    from tamesu.speech_pool import local_speech_pool

    audio = Audio(np.asarray(samples, dtype=np.int16), rate)
    return await (pool or local_speech_pool()).transcribe(audio, language=language, engine=engine)
