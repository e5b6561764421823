"""The Transcript: everything that happened in one run, and the one thing assertions read.

Every target fills the same structure, so an assertion works the same on a REST agent, a model
prompt or a phone call. Times are seconds since the run started.

A transcript file carries the results format it was written in (``format``); ``from_json`` reads
every format up to this one: an unversioned transcript (format 1) held its events as dictionaries,
which are read into the typed events of ``tamesu.kernel.events``.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from tamesu.kernel.events import TranscriptEvent, upgrade_event

__all__ = [
    "FORMAT",
    "AudioSegment",
    "HandoffInfo",
    "ToolCallRecord",
    "Transcript",
    "Turn",
    "check_format",
]

FORMAT = 4
"""The results format this tamesu writes: results.jsonl records and transcripts carry it. Format 1
is what came before versions were written (a record or transcript without ``format``); format 2
kept each transcript in a file of its own, format 3 appends them to one log (``transcript_span``);
format 4 adds checks that were skipped or inconclusive and the run outcome ``inconclusive``, which
an older tamesu would misread as failures."""


class ToolCallRecord(msgspec.Struct, kw_only=True, gc=False):
    name: str
    args: dict[str, Any] = msgspec.field(default_factory=dict)
    id: str | None = None
    result: Any = None
    """What the agent got back, when tamesu saw it (model / realtime / pipecat targets)."""


class HandoffInfo(msgspec.Struct, kw_only=True, gc=False):
    turn: int
    """The 1-based agent turn on which the agent handed off."""
    to: str | None = None
    summary: str | None = None


class AudioSegment(msgspec.Struct, kw_only=True, gc=False):
    start: float
    end: float
    channel: Literal["caller", "agent"]
    text: str | None = None


class Turn(msgspec.Struct, kw_only=True, gc=False):
    role: Literal["user", "agent"]
    text: str = ""
    index: int = 0
    """1-based among the turns of the same role."""
    source: str | None = None
    """user turns: script, simulator or counterpart."""
    reasoning: str | None = None
    """user turns played by a model: why it said this."""
    data: dict[str, Any] | None = None
    tool_calls: list[ToolCallRecord] = msgspec.field(default_factory=list)
    raw: list[Any] = msgspec.field(default_factory=list)
    """The agent's raw responses for this turn (JSON bodies, websocket messages, events)."""
    status: int | None = None
    sent_at: float | None = None
    first_byte_at: float | None = None
    first_audio_at: float | None = None
    end_at: float | None = None
    dtmf: str | None = None
    audio: list[AudioSegment] = msgspec.field(default_factory=list)
    unread: str | None = None
    """Why an agent turn is empty though its reply had a body: a response path matched nothing
    (``response.text $.reply matched nothing; the reply's keys: answer, id``)."""
    refusal: str | None = None
    """The agent refused the user turn at its protocol's level, in one line (a SIP call refused
    with ``403 Forbidden``); an HTTP status of 400 or more says so on its own (``status``)."""

    @property
    def latency_ms(self) -> float | None:
        """From the user's message being sent to the agent's first byte (or its end)."""
        if self.sent_at is None:
            return None
        first = self.first_audio_at or self.first_byte_at or self.end_at
        return None if first is None else (first - self.sent_at) * 1000.0


class Transcript(msgspec.Struct, kw_only=True, gc=False):
    format: int = FORMAT
    """The results format the transcript was written in."""
    run_id: str = ""
    test: str = ""
    target: str = ""
    session: str = ""
    turns: list[Turn] = msgspec.field(default_factory=list)
    captures: dict[str, str] = msgspec.field(default_factory=dict)
    handoff: HandoffInfo | None = None
    dtmf_received: str = ""
    end_reason: str | None = None
    """done, agent, max_turns, timeout, error; sip adds caller, no_answer, busy."""
    started_at: float = 0.0
    """Wall-clock time (epoch seconds) of the run's start; the other times are relative to it."""
    duration: float = 0.0
    metrics: dict[str, float] = msgspec.field(default_factory=dict)
    events: list[TranscriptEvent] = msgspec.field(default_factory=list)
    agent_faults: dict[str, int] = msgspec.field(default_factory=dict)
    """Every fault the agent produced in the run, retried or not, by kind (http_5xx, refused,
    timeout, dropped, ...; see ``tamesu.wire.faults``)."""

    def agent_turns(self) -> list[Turn]:
        return [t for t in self.turns if t.role == "agent"]

    def user_turns(self) -> list[Turn]:
        return [t for t in self.turns if t.role == "user"]

    def tool_calls(self) -> list[ToolCallRecord]:
        return [c for t in self.turns for c in t.tool_calls]

    def agent_text(self) -> str:
        return "\n".join(t.text for t in self.agent_turns())

    def to_json(self) -> bytes:
        from tamesu.untrusted import json_bytes

        return json_bytes(self)

    @classmethod
    def from_json(cls, data: bytes | str) -> Transcript:
        """A transcript file of any format up to ``FORMAT``, as this format."""
        version = _VERSION.decode(data).format
        if version == FORMAT:
            return _DECODER.decode(data)
        check_format(version, "transcript")
        if version >= 2:  # formats 3 and 4 changed where transcripts are kept and what results hold
            transcript = _DECODER.decode(data)
            transcript.format = FORMAT
            return transcript
        raw = msgspec.json.decode(data)
        events = raw.get("events") if isinstance(raw, dict) else None
        raw["events"] = [upgrade_event(e) for e in events or () if isinstance(e, dict)]
        raw["format"] = FORMAT
        return msgspec.convert(raw, cls)


class _Version(msgspec.Struct, gc=False):
    format: int = 1


_VERSION = msgspec.json.Decoder(_Version)
_DECODER = msgspec.json.Decoder(Transcript)


def check_format(version: int, what: str) -> None:
    """Refuse a file written in a results format newer than this tamesu reads."""
    if version > FORMAT:
        from tamesu.errors import UsageError

        raise UsageError(
            f"this {what} was written by a newer tamesu (results format {version}); "
            f"this one reads formats up to {FORMAT}: upgrade tamesu to read it"
        )


def turn_view(transcript: Transcript, on_turn: int | str) -> Transcript | None:
    """The transcript cut down to one agent turn (1-based or ``last``) and the user turn before it."""
    agent = transcript.agent_turns()
    if not agent:
        return None
    if on_turn == "last":
        chosen = agent[-1]
    else:
        n = int(on_turn)
        if not 1 <= n <= len(agent):
            return None
        chosen = agent[n - 1]
    pos = next(i for i, t in enumerate(transcript.turns) if t is chosen)
    turns = [chosen]
    if pos > 0 and transcript.turns[pos - 1].role == "user":
        turns.insert(0, transcript.turns[pos - 1])
    return msgspec.structs.replace(transcript, turns=turns)
