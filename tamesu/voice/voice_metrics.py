"""Voice metrics, measured on the audio of the call rather than on messages.

A call's ``CallTimeline`` holds what the pipeline saw: the caller's speech spans (known to the
sample, since tamesu rendered them), the agent's speech segments (VAD on the audio as the caller
heard it), each turn's timings, each barge-in, and pairs of transcripts for the word error rate.
``voice_metrics`` turns it into the named metrics of ``tamesu.metrics.METRICS``:

- ``turn_latency_ms_*``: the caller's end of speech to the agent's first audible speech.
- ``time_to_first_audio_ms_*``: the caller's end of speech to the first agent audio on the wire.
- ``barge_ins``, ``interruptions``, ``barge_in_ms_*``: the caller talked over the agent; how many
  times the agent yielded (went quiet within 500 ms of the caller finishing), and how long after
  the caller started it went quiet.
- ``talk_over_ms``, ``silence_ms_max``, ``call_duration_s``, ``caller_speech_s``, ``agent_speech_s``.
- ``wer_agent_transcript``: the agent's own transcript against tamesu's STT of its audio.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

from tamesu.audio.timing import Segment, merge, overlap, total
from tamesu.metrics import percentile
from tamesu.spoken import spoken_words

__all__ = ["BargeIn", "CallTimeline", "TurnTiming", "voice_metrics", "wer", "word_edits"]

YIELD_GRACE_S = 0.5
"""An agent that goes quiet this soon after the caller stops talking over it has yielded."""


@dataclass
class TurnTiming:
    """One agent turn: when the caller spoke before it, when the agent was first received and heard."""

    index: int
    caller_start: float | None = None
    caller_end: float | None = None
    first_audio_rx: float | None = None
    """The first audible agent audio received on the wire after the caller started."""
    first_audio_at: float | None = None
    """The onset of the agent's first speech heard after the caller started (VAD)."""
    end_at: float | None = None
    interrupted: bool = False


@dataclass
class BargeIn:
    """The caller started talking while the agent spoke."""

    start: float
    caller_end: float | None = None
    quiet_at: float | None = None
    """When the agent's audio went quiet afterwards (its speech ended or its audio was cleared)."""
    cleared: bool = False
    """The agent said so (Twilio ``clear``, the protocol's ``interrupted`` message)."""

    @property
    def yielded(self) -> bool:
        return (
            self.quiet_at is not None
            and self.caller_end is not None
            and self.quiet_at <= self.caller_end + YIELD_GRACE_S
        )


@dataclass
class CallTimeline:
    """Everything a call's metrics are computed from; times in seconds on the run's clock."""

    started: float = 0.0
    ended: float | None = None
    caller: list[Segment] = field(default_factory=list)
    agent: list[Segment] = field(default_factory=list)
    turns: list[TurnTiming] = field(default_factory=list)
    barge_ins: list[BargeIn] = field(default_factory=list)
    transcript_pairs: list[tuple[str, str]] = field(default_factory=list)
    """(tamesu's STT, the agent's own transcript) per turn that has both."""


def _stats(name: str, values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    out = {
        f"{name}_{s}": percentile(values, p) for s, p in (("p50", 50), ("p90", 90), ("p95", 95), ("p99", 99))
    }
    out[f"{name}_max"] = max(values)
    out[f"{name}_mean"] = sum(values) / len(values)
    return {k: float(v) for k, v in out.items() if v is not None}


def _silences(tl: CallTimeline) -> list[float]:
    """Per answered turn, the longest stretch the caller waited in silence: before the agent's first
    speech, or between its segments (the quiet that ends the turn is not waiting)."""
    out = []
    agent = merge(tl.agent)
    for turn in tl.turns:
        if turn.caller_end is None or turn.end_at is None:
            continue
        inside = [s for s in agent if s.end > turn.caller_end and s.start < turn.end_at]
        if not inside:
            continue
        gaps = [inside[0].start - turn.caller_end]
        gaps += [b.start - a.end for a, b in pairwise(inside)]
        out.append(max(0.0, *gaps))
    return out


def voice_metrics(tl: CallTimeline, *, now: float | None = None) -> dict[str, float]:
    """The voice metrics of a call so far (``now`` closes a call that has not ended)."""
    out: dict[str, float] = {}
    latency = [
        (t.first_audio_at - t.caller_end) * 1000
        for t in tl.turns
        if t.first_audio_at is not None and t.caller_end is not None
    ]
    first = [
        (t.first_audio_rx - t.caller_end) * 1000
        for t in tl.turns
        if t.first_audio_rx is not None and t.caller_end is not None
    ]
    out.update(_stats("turn_latency_ms", latency))
    out.update(_stats("time_to_first_audio_ms", first))
    out["barge_ins"] = float(len(tl.barge_ins))
    out["interruptions"] = float(sum(1 for b in tl.barge_ins if b.yielded))
    quiet = [(b.quiet_at - b.start) * 1000 for b in tl.barge_ins if b.quiet_at is not None]
    for stat, value in _stats("barge_in_ms", quiet).items():
        if stat.rsplit("_", 1)[-1] in ("p50", "p95", "max"):
            out[stat] = value
    out["talk_over_ms"] = overlap(tl.caller, tl.agent) * 1000
    silences = _silences(tl)
    if silences:
        out["silence_ms_max"] = max(silences) * 1000
    end = tl.ended if tl.ended is not None else now
    if end is not None:
        out["call_duration_s"] = max(0.0, end - tl.started)
    out["caller_speech_s"] = total(tl.caller)
    out["agent_speech_s"] = total(tl.agent)
    edits = words = 0
    for ours, theirs in tl.transcript_pairs:
        e, n = word_edits(ours, theirs)
        edits, words = edits + e, words + n
    if words:
        out["wer_agent_transcript"] = edits / words
    return {k: round(v, 3) for k, v in out.items()}


def word_edits(reference: str, hypothesis: str, *, language: str | None = None) -> tuple[int, int]:
    """(substitutions + deletions + insertions, words in the reference), over spoken forms
    (``tamesu.spoken``: case, punctuation and how numbers are written or grouped do not count)."""
    ref = spoken_words(reference, language=language, join_numbers=True)
    hyp = spoken_words(hypothesis, language=language, join_numbers=True)
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1], len(ref)


def wer(reference: str, hypothesis: str, *, language: str | None = None) -> float:
    """Word error rate of ``hypothesis`` against ``reference`` (0 when both are empty)."""
    edits, n = word_edits(reference, hypothesis, language=language)
    return edits / n if n else float(edits > 0)
