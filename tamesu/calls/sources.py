"""Which files make up each recorded call, and the transcript that may come with it.

A call is a stereo recording (tamesu's own, or a Twilio dual-channel recording), or two mono files
named ``<call>.caller.<ext>`` and ``<call>.agent.<ext>`` (``-`` or ``_`` in place of the dot). A
transcript beside it (``<call>.json``) is either speaker turns (``{"turns": [{"speaker": "caller",
"text": ..., "start": ..., "end": ...}]}``) or the tamesu transcript of a recorded run.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = ["AUDIO_SUFFIXES", "CallFiles", "SpokenTurn", "find_calls", "read_transcript"]

AUDIO_SUFFIXES = frozenset({".wav", ".mp3", ".flac", ".ogg", ".m4a"})
MAX_TRANSCRIPT_BYTES = 8 * 1024 * 1024
_MONO = re.compile(r"^(?P<call>.+?)[._-](?P<side>caller|agent)$", re.IGNORECASE)


@dataclass(frozen=True)
class CallFiles:
    """The files of one recorded call."""

    name: str
    stereo: Path | None = None
    caller: Path | None = None
    agent: Path | None = None
    transcript: Path | None = None

    @property
    def audio(self) -> Path:
        return self.stereo or self.caller or self.agent or Path(self.name)


@dataclass(frozen=True)
class SpokenTurn:
    """One turn of a transcript: who spoke, the words, and where in the recording (when known)."""

    speaker: Literal["caller", "agent"]
    text: str
    start: float | None = None
    end: float | None = None


def find_calls(paths: list[Path]) -> list[CallFiles]:
    """Every call under ``paths`` (files, or folders read one level deep), in name order."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(p for p in sorted(path.iterdir()) if p.is_file())
        else:
            files.append(path)
    audio = [f for f in files if f.suffix.lower() in AUDIO_SUFFIXES or not f.exists()]
    pairs: dict[tuple[Path, str], dict[str, Path]] = {}
    calls: list[CallFiles] = []
    for f in audio:
        m = _MONO.match(f.stem)
        if m:
            pairs.setdefault((f.parent, m["call"]), {})[m["side"].lower()] = f
        else:
            calls.append(CallFiles(f.stem, stereo=f, transcript=_transcript_of(f.parent, f.stem)))
    for (folder, name), sides in pairs.items():
        calls.append(
            CallFiles(
                name,
                caller=sides.get("caller"),
                agent=sides.get("agent"),
                transcript=_transcript_of(folder, name),
            )
        )
    return sorted(calls, key=lambda c: c.name)


def _transcript_of(folder: Path, name: str) -> Path | None:
    for candidate in (folder / f"{name}.json", folder / f"{name}.transcript.json"):
        if candidate.is_file():
            return candidate
    return None


def read_transcript(path: Path) -> list[SpokenTurn]:
    """The turns of a transcript file; ``ValueError`` says what is wrong with it."""
    if path.stat().st_size > MAX_TRANSCRIPT_BYTES:
        raise ValueError(f"{path}: larger than {MAX_TRANSCRIPT_BYTES // (1024 * 1024)} MiB")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a JSON transcript ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("turns"), list):
        raise ValueError(f"{path}: a transcript is an object with a list of turns")
    if "format" in data and any(isinstance(t, dict) and "role" in t for t in data["turns"]):
        return _tamesu_turns(data)
    out = []
    for i, turn in enumerate(data["turns"], start=1):
        if not isinstance(turn, dict) or turn.get("speaker") not in ("caller", "agent"):
            raise ValueError(f"{path}: turn {i} needs a speaker of caller or agent")
        text = turn.get("text")
        if not isinstance(text, str):
            raise ValueError(f"{path}: turn {i} has no text")
        out.append(SpokenTurn(turn["speaker"], text, _time(turn.get("start")), _time(turn.get("end"))))
    return out


def _tamesu_turns(data: dict[str, Any]) -> list[SpokenTurn]:
    """A recorded run's turns, their times made offsets into its recording: a caller turn's audio is
    recorded on the agent turn that answers it; an agent turn's words are the agent's own
    transcript when it published one (``voice_turn`` events), else what tamesu heard."""
    origin = 0.0
    own: dict[int, str] = {}
    for event in data.get("events") or []:
        if not isinstance(event, dict):
            continue
        if event.get("type") == "voice_call" and event.get("recording_starts_at") is not None:
            origin = float(event["recording_starts_at"])
        if event.get("type") == "voice_turn" and isinstance(event.get("agent_transcript"), str):
            own[int(event.get("turn") or 0)] = event["agent_transcript"]
    out: list[SpokenTurn] = []
    pending: dict[str, Any] | None = None
    for turn in data["turns"]:
        if not isinstance(turn, dict):
            continue
        if turn.get("role") == "user":
            pending = turn
            continue
        spans = {c: _span(turn, c, origin) for c in ("caller", "agent")}
        if pending is not None:
            out.append(SpokenTurn("caller", str(pending.get("text") or ""), *spans["caller"]))
            pending = None
        text = own.get(int(turn.get("index") or 0)) or str(turn.get("text") or "")
        out.append(SpokenTurn("agent", text, *spans["agent"]))
    if pending is not None:
        out.append(SpokenTurn("caller", str(pending.get("text") or "")))
    return out


def _span(turn: dict[str, Any], channel: str, origin: float) -> tuple[float | None, float | None]:
    spans = [a for a in turn.get("audio") or [] if isinstance(a, dict) and a.get("channel") == channel]
    if not spans:
        return None, None
    start = min(float(a["start"]) for a in spans)
    end = max(float(a["end"]) for a in spans)
    return max(0.0, start - origin), max(0.0, end - origin)


def _time(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"a turn's start and end are seconds from 0, not {value!r}")
    return float(value)
