"""Voice activity: WebRTC VAD decisions per frame, turned into speech segments and turn ends.

``TurnDetectorBank`` runs the segmenter for many calls in lockstep (one frame per call per step,
state in numpy arrays) behind a frame classifier; ``TurnDetector`` is the single-call stream you
push audio of any length into. Events carry two times: ``at``, when the thing happened in the audio
(speech began, speech ended), and ``decided_at``, the audio time by which a live listener knows it;
their difference is the decision latency (the hangover for ``speech_end``, ``idle`` for
``turn_end``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

import numpy as np

from tamesu.errors import MissingExtraError

from .pcm import Framer, frame_samples, from_bytes
from .resample import StreamResampler
from .timing import Segment

__all__ = [
    "FrameClassifier",
    "TurnDetector",
    "TurnDetectorBank",
    "VadEvent",
    "WebRtcVad",
    "speech_segments",
]

WEBRTC_RATES = (8000, 16000, 32000, 48000)
EventKind = Literal["speech_start", "speech_end", "turn_end"]


@dataclass(frozen=True)
class VadEvent:
    kind: EventKind
    at: float
    decided_at: float


class FrameClassifier(Protocol):
    """Speech or not for one frame of each call; other VAD engines plug in here."""

    rate: int
    frame: int

    def classify(self, frames: np.ndarray) -> np.ndarray: ...

    def reset(self, index: int) -> None: ...


def _webrtcvad() -> Any:
    try:
        import webrtcvad
    except ImportError as exc:
        raise MissingExtraError("webrtcvad (voice activity detection)", extra="voice") from exc
    return webrtcvad


class WebRtcVad:
    """One ``webrtcvad.Vad`` per call (it keeps state); mode 0 (lenient) to 3 (aggressive)."""

    def __init__(self, n_calls: int = 1, *, rate: int = 16000, mode: int = 2, frame_ms: int = 20) -> None:
        if rate not in WEBRTC_RATES:
            raise ValueError(f"webrtcvad runs at {WEBRTC_RATES} Hz, not {rate}")
        if frame_ms not in (10, 20, 30):
            raise ValueError(f"webrtcvad frames are 10, 20 or 30 ms, not {frame_ms}")
        if mode not in (0, 1, 2, 3):
            raise ValueError(f"webrtcvad mode is 0-3, not {mode}")
        self._lib = _webrtcvad()
        self.rate, self.mode = rate, mode
        self.frame = frame_samples(rate, frame_ms)
        self._vads = [self._lib.Vad(mode) for _ in range(n_calls)]

    def classify(self, frames: np.ndarray) -> np.ndarray:
        rows = frames.astype("<i2", copy=False)
        return np.fromiter(
            (v.is_speech(r.tobytes(), self.rate) for v, r in zip(self._vads, rows)), bool, len(rows)
        )

    def reset(self, index: int) -> None:
        self._vads[index] = self._lib.Vad(self.mode)


class TurnDetectorBank:
    """Speech start / end and turn end for ``n_calls`` calls, one frame per call per ``process``.

    Speech starts after ``start_ms`` of consecutive speech frames, dated at the first speech frame
    since the last silence of ``hangover_ms`` (so a short first syllable counts); it ends after
    ``hangover_ms`` of non-speech (dated at the first silent frame), and a turn ends when
    ``idle`` seconds pass after a speech end with no new speech. webrtcvad calls the first ~100 ms of
    any stream speech while it adapts, so a run that begins within ``warmup_ms`` must last
    ``start_ms`` beyond it.
    """

    def __init__(
        self,
        classifier: FrameClassifier,
        n_calls: int,
        *,
        start_ms: float = 60.0,
        hangover_ms: float = 300.0,
        idle: float = 2.0,
        warmup_ms: float = 100.0,
    ) -> None:
        self.classifier = classifier
        self.n_calls = n_calls
        self.frame_s = classifier.frame / classifier.rate
        self._start = max(1, round(start_ms / 1000 / self.frame_s))
        self._hang = max(1, round(hangover_ms / 1000 / self.frame_s))
        self._warm = round(warmup_ms / 1000 / self.frame_s)
        self.idle = idle
        self._k = np.zeros(n_calls, dtype=np.int64)
        self._run = np.zeros(n_calls, dtype=np.int64)
        self._quiet = np.zeros(n_calls, dtype=np.int64)
        self._speaking = np.zeros(n_calls, dtype=bool)
        self._open = np.zeros(n_calls, dtype=bool)
        self._last_end = np.zeros(n_calls)
        self._onset = np.full(n_calls, -1, dtype=np.int64)

    def reset(self, index: int) -> None:
        """Give slot ``index`` to a new call."""
        self.classifier.reset(index)
        for arr in (self._k, self._run, self._quiet, self._speaking, self._open, self._last_end):
            arr[index] = 0
        self._onset[index] = -1

    def process(self, frames: np.ndarray) -> list[tuple[int, VadEvent]]:
        """Classify one int16 frame per call, (calls, samples); the events completed, as (call index, event)."""
        return self.process_decisions(self.classifier.classify(frames))

    def process_decisions(self, speech: np.ndarray) -> list[tuple[int, VadEvent]]:
        """Advance the segmenter with given per-call decisions (for classifiers run elsewhere)."""
        k = self._k.copy()
        self._run = np.where(speech, self._run + 1, 0)
        self._quiet = np.where(speech, 0, self._quiet + 1)
        self._onset = np.where(speech & (self._onset < 0), k, self._onset)
        onset = self._onset.copy()
        self._onset[self._quiet >= self._hang] = -1
        first = k + 1 - self._run
        need = self._start + np.maximum(0, self._warm - first)
        start = ~self._speaking & (self._run > 0) & (self._run >= need)
        end = self._speaking & (self._quiet >= self._hang)
        self._speaking = (self._speaking | start) & ~end
        frame_end = (k + 1) * self.frame_s
        end_at = (k + 1 - self._quiet) * self.frame_s
        self._last_end = np.where(end, end_at, self._last_end)
        self._open = (self._open | end) & ~start
        turn = self._open & ~self._speaking & (frame_end - self._last_end >= self.idle - 1e-9)
        self._open &= ~turn
        self._k += 1
        if not (start.any() or end.any() or turn.any()):
            return []
        events = []
        for i in np.flatnonzero(start | end | turn):
            done = float(frame_end[i])
            if start[i]:
                events.append((int(i), VadEvent("speech_start", float(onset[i] * self.frame_s), done)))
            if end[i]:
                events.append((int(i), VadEvent("speech_end", float(end_at[i]), done)))
            if turn[i]:
                events.append((int(i), VadEvent("turn_end", float(self._last_end[i]), done)))
        return events

    def finish(self, index: int) -> list[VadEvent]:
        """End of one call's audio: close speech that is still open."""
        if not self._speaking[index]:
            return []
        self._speaking[index] = False
        at = float((self._k[index] - self._quiet[index]) * self.frame_s)
        return [VadEvent("speech_end", at, float(self._k[index] * self.frame_s))]


class TurnDetector:
    """One call's stream: ``push`` int16 audio (or PCM16 bytes) of any length, get events.

    Rates webrtcvad does not take are resampled to 16 kHz first; the resampler releases audio in
    bursts, so ``decided_at`` is then the input time pushed when the event came out.
    """

    def __init__(
        self,
        rate: int = 16000,
        *,
        mode: int = 2,
        frame_ms: int = 20,
        start_ms: float = 60.0,
        hangover_ms: float = 300.0,
        idle: float = 2.0,
        warmup_ms: float = 100.0,
        classifier: FrameClassifier | None = None,
    ) -> None:
        self.rate = rate
        vad_rate = rate if rate in WEBRTC_RATES else 16000
        self._resampler = StreamResampler(rate, vad_rate) if vad_rate != rate else None
        self._pushed = 0
        clf = classifier or WebRtcVad(1, rate=vad_rate, mode=mode, frame_ms=frame_ms)
        self.bank = TurnDetectorBank(
            clf, 1, start_ms=start_ms, hangover_ms=hangover_ms, idle=idle, warmup_ms=warmup_ms
        )
        self._framer = Framer(clf.frame)
        self.segments: list[Segment] = []
        self._open_start: float | None = None

    def push(self, chunk: np.ndarray | bytes) -> list[VadEvent]:
        samples = from_bytes(chunk) if isinstance(chunk, (bytes, bytearray, memoryview)) else chunk
        self._pushed += len(samples)
        if self._resampler is not None:
            samples = self._resampler.push(samples)
        events: list[VadEvent] = []
        for frame in self._framer.push(samples):
            events += [e for _, e in self.bank.process(frame[None, :])]
        if self._resampler is not None:
            events = [replace(e, decided_at=max(e.decided_at, self._pushed / self.rate)) for e in events]
        self._track(events)
        return events

    def finish(self) -> list[VadEvent]:
        """The stream ended: close the segment in progress."""
        events = self.bank.finish(0)
        self._track(events)
        return events

    def _track(self, events: list[VadEvent]) -> None:
        for e in events:
            if e.kind == "speech_start":
                self._open_start = e.at
            elif e.kind == "speech_end" and self._open_start is not None:
                self.segments.append(Segment(self._open_start, e.at))
                self._open_start = None


def speech_segments(samples: np.ndarray, rate: int, **options: Any) -> list[Segment]:
    """The speech segments of a whole int16 signal."""
    det = TurnDetector(rate, **options)
    det.push(samples)
    det.finish()
    return det.segments
