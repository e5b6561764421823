"""A voice run in the HTML report: the stereo recording as an audio player, its waveform, and the
turn timeline under it (who spoke when, barge-ins, and each turn's latency).

The recording is embedded in the page as a data URI, so the report stays one file that works
offline. The waveform is computed here (peaks per column, with the standard library: the report
needs no numpy) and drawn as SVG on the same time axis as the timeline; ``report.js`` moves a
playhead over both and seeks where they are clicked.
"""

from __future__ import annotations

import base64
import sys
import wave
from array import array
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.kernel.events import Interrupted, VoiceCall, VoiceTurn

if TYPE_CHECKING:
    from tamesu.kernel.transcript import Transcript
    from tamesu.reports.rundir import RunDirectory

__all__ = ["MAX_AUDIO_BYTES", "voice_block", "waveform_peaks"]

MAX_AUDIO_BYTES = 40 * 1024 * 1024
"""A recording larger than this is not embedded (the page would not open); the report says where it is."""
_COLUMNS = 500
_W = 1000


def waveform_peaks(path: Path, columns: int = _COLUMNS) -> tuple[float, list[float], list[float]]:
    """(seconds, caller peaks, agent peaks) of a stereo PCM16 WAV, peaks in 0..1 per column."""
    with wave.open(str(path), "rb") as w:
        if w.getnchannels() != 2 or w.getsampwidth() != 2:
            raise ValueError(f"{path}: not a stereo PCM16 recording")
        rate, frames = w.getframerate(), w.getnframes()
        samples = array("h")
        samples.frombytes(w.readframes(frames))
    if sys.byteorder == "big":
        samples.byteswap()
    caller, agent = samples[0::2], samples[1::2]
    n = len(caller)
    size = max(1, -(-n // columns))
    out: tuple[list[float], list[float]] = ([], [])
    for start in range(0, n, size):
        for channel, peaks in zip((caller, agent), out):
            chunk = channel[start : start + size]
            peaks.append(max(max(chunk), -min(chunk)) / 32768 if chunk else 0.0)
    return (n / rate if rate else 0.0), out[0], out[1]


def _wave_path(peaks: list[float], mid: float, half: float) -> str:
    if not peaks:
        return ""
    step = _W / len(peaks)
    top = " ".join(f"{i * step:.1f},{mid - p * half:.1f}" for i, p in enumerate(peaks))
    bottom = " ".join(f"{i * step:.1f},{mid + p * half:.1f}" for i, p in reversed(list(enumerate(peaks))))
    return f"M{top} L{bottom} Z"


def _segments(transcript: Transcript, offset: float) -> list[tuple[str, float, float]]:
    seen: set[tuple[str, float, float]] = set()
    for turn in transcript.turns:
        for seg in turn.audio:
            seen.add((seg.channel, seg.start - offset, seg.end - offset))
    return sorted(seen, key=lambda s: (s[1], s[0]))


def voice_block(
    run_dir: RunDirectory, transcript: Transcript, *, max_audio_bytes: int = MAX_AUDIO_BYTES
) -> str:
    """The player, waveform and timeline of a voice run; empty for a run that was not a call."""
    call = next((e for e in transcript.events if isinstance(e, VoiceCall)), None)
    if call is None:
        return ""
    offset = call.recording_starts_at or 0.0
    segments = _segments(transcript, offset)
    path = run_dir.inside(call.recording) if call.recording else None
    audio = ""
    peaks: tuple[list[float], list[float]] = ([], [])
    duration = max((end for _, _, end in segments), default=0.0)
    if path is not None and path.is_file():
        try:
            duration, *channels = waveform_peaks(path)
            peaks = (channels[0], channels[1])
        except (OSError, ValueError, EOFError, wave.Error):
            pass
        size = path.stat().st_size
        if size <= max_audio_bytes:
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            audio = f'<audio controls preload="auto" src="data:audio/wav;base64,{data}"></audio>'
        else:
            audio = (
                f'<p class="note">The recording ({size / 1e6:.0f} MB) is too large to embed: '
                f"{escape(str(call.recording))} in the run directory.</p>"
            )
    if duration <= 0:
        return ""
    parts = [f'<div class="voice" data-duration="{duration:.3f}">', audio]
    parts.append(
        '<p class="legend">Recording: <span class="c">caller</span> (left channel, as sent down the '
        f'line) and <span class="a">agent</span> (right channel, as heard); {duration:.1f}s. '
        "Click to seek.</p>"
    )
    if peaks[0]:
        parts.append(
            f'<svg class="waveform" viewBox="0 0 {_W} 120" preserveAspectRatio="none" '
            f'aria-label="waveform"><path d="{_wave_path(peaks[0], 30, 28)}" fill="#2f6fde"/>'
            f'<path d="{_wave_path(peaks[1], 90, 28)}" fill="#e07b00"/>'
            '<line x1="0" x2="1000" y1="60" y2="60" stroke="#d9dee5"/>'
            '<line class="playhead" x1="0" x2="0" y1="0" y2="120" stroke="#1d232b" stroke-width="2"/></svg>'
        )
    parts.append(_timeline(transcript, segments, offset, duration))
    parts.append("</div>")
    return "".join(parts)


def _timeline(
    transcript: Transcript, segments: list[tuple[str, float, float]], offset: float, duration: float
) -> str:
    """Caller and agent speech on two lanes, barge-ins as red marks, latencies as brackets."""

    def x(t: float) -> float:
        return max(0.0, min(_W, t / duration * _W))

    out = [f'<svg class="timeline" viewBox="0 0 {_W} 118" aria-label="turn timeline">']
    out.append('<text x="3" y="11" font-size="10" fill="#2f6fde">caller</text>')
    out.append('<text x="3" y="45" font-size="10" fill="#e07b00">agent</text>')
    for channel, start, end in segments:
        y, colour = (14, "#2f6fde") if channel == "caller" else (48, "#e07b00")
        out.append(
            f'<rect class="seg-{channel}" x="{x(start):.1f}" y="{y}" width="{max(1.0, x(end) - x(start)):.1f}" '
            f'height="14" rx="2" fill="{colour}" fill-opacity="0.75"/>'
        )
    for event in transcript.events:
        if isinstance(event, VoiceTurn):
            _latency(out, event, offset, x)
        elif isinstance(event, Interrupted):
            at = x(event.at - offset)
            out.append(
                f'<path class="barge-in" d="M{at:.1f},36 l-5,-7 h10 z" fill="#cf222e"><title>barge-in at '
                f"{event.at - offset:.2f}s</title></path>"
            )
    for i in range(0, 11):
        t = duration * i / 10
        anchor = "start" if i == 0 else ("end" if i == 10 else "middle")
        out.append(
            f'<text x="{x(t):.1f}" y="112" font-size="10" fill="#5f6b7a" text-anchor="{anchor}">{t:.1f}s</text>'
        )
    out.append(
        '<line class="playhead" x1="0" x2="0" y1="0" y2="100" stroke="#1d232b" stroke-width="2"/></svg>'
    )
    return "".join(out)


def _latency(out: list[str], event: VoiceTurn, offset: float, x: Any) -> None:
    end, first = event.caller_end, event.first_audio_at
    if end is None or first is None or first < end:
        return
    a, b = x(end - offset), x(first - offset)
    ms = (first - end) * 1000
    out.append(
        f'<path class="latency" d="M{a:.1f},70 v6 H{b:.1f} v-6" fill="none" stroke="#5f6b7a"/>'
        f'<text x="{(a + b) / 2:.1f}" y="90" font-size="10" fill="#1d232b" text-anchor="middle">{ms:.0f} ms</text>'
    )
