"""Every message that travels between the actors of a run, as one tagged msgspec union.

Control messages (session start/end, interrupt, error) jump the queue; data messages keep order.
Audio travels as PCM16 frames with a sequence number and a timestamp, and crosses a process
boundary only in batches (``AudioBatch``), never one frame per call.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import msgspec

__all__ = [
    "AgentPartial",
    "AgentTurn",
    "AudioBatch",
    "AudioFrame",
    "AudioSpan",
    "Dtmf",
    "ErrorMsg",
    "Event",
    "Handoff",
    "Interrupt",
    "Message",
    "MetricMsg",
    "RawResponse",
    "SessionEnd",
    "SessionStart",
    "ToolCall",
    "ToolResult",
    "UserTurn",
    "decode",
    "encode",
    "is_control",
]


class _Msg(msgspec.Struct, frozen=True, tag_field="type", kw_only=True):
    control: ClassVar[bool] = False
    at: float = 0.0
    """Seconds since the run started (the run's clock)."""


class SessionStart(_Msg, tag="session_start", frozen=True):
    control: ClassVar[bool] = True
    run_id: str
    session: str = ""


class SessionEnd(_Msg, tag="session_end", frozen=True):
    control: ClassVar[bool] = True
    reason: str = "done"
    """done (the script or goal finished), agent (the agent ended it), max_turns, timeout, error."""


class Interrupt(_Msg, tag="interrupt", frozen=True):
    control: ClassVar[bool] = True


class ErrorMsg(_Msg, tag="error", frozen=True):
    control: ClassVar[bool] = True
    message: str
    kind: str = "agent"
    retryable: bool = True


class FileRef(msgspec.Struct, frozen=True, kw_only=True):
    path: str | None = None
    uri: str | None = None
    name: str | None = None
    mime: str | None = None


class UserTurn(_Msg, tag="user_turn", frozen=True):
    text: str = ""
    data: dict[str, Any] | None = None
    files: list[FileRef] = msgspec.field(default_factory=list)
    source: Literal["script", "simulator", "counterpart"] = "script"
    reasoning: str | None = None
    tactic: str | None = None
    """An attacker's turn: the tactic it uses (the recorder makes it a ``tactic`` event)."""


class ToolCall(_Msg, tag="tool_call", frozen=True):
    name: str
    args: dict[str, Any] = msgspec.field(default_factory=dict)
    id: str | None = None


class ToolResult(_Msg, tag="tool_result", frozen=True):
    name: str
    result: Any = None
    id: str | None = None


class Handoff(_Msg, tag="handoff", frozen=True):
    to: str | None = None
    summary: str | None = None


class RawResponse(_Msg, tag="raw", frozen=True):
    body: Any = None
    status: int | None = None


class AgentPartial(_Msg, tag="agent_partial", frozen=True):
    text: str


class AudioSpan(msgspec.Struct, frozen=True, kw_only=True):
    """A stretch of speech on one side of a call (seconds on the run's clock), with its words if known."""

    start: float
    end: float
    channel: Literal["caller", "agent"]
    text: str | None = None


class AgentTurn(_Msg, tag="agent_turn", frozen=True):
    """The agent's whole turn; the last message a target emits for one user turn."""

    text: str = ""
    done: bool = False
    """The agent ended the session."""
    status: int | None = None
    sent_at: float | None = None
    first_byte_at: float | None = None
    end_at: float | None = None
    first_audio_at: float | None = None
    """Audio targets: the onset of the agent's first speech in this turn, as the caller heard it."""
    audio: list[AudioSpan] = msgspec.field(default_factory=list)
    """Audio targets: the speech of both sides during this turn (VAD segments, with transcripts)."""


class Dtmf(_Msg, tag="dtmf", frozen=True):
    digits: str
    direction: Literal["sent", "received"] = "sent"


class Event(_Msg, tag="event", frozen=True):
    """Something a target observed that belongs in the transcript's events (a recording, a barge-in)."""

    name: str
    data: dict[str, Any] = msgspec.field(default_factory=dict)


class MetricMsg(_Msg, tag="metric", frozen=True):
    name: str
    value: float


class AudioFrame(_Msg, tag="audio_frame", frozen=True):
    seq: int
    pcm: bytes
    sample_rate: int = 16000
    channel: Literal["caller", "agent"] = "caller"


class AudioBatch(_Msg, tag="audio_batch", frozen=True):
    frames: list[AudioFrame]


Message = (
    SessionStart
    | SessionEnd
    | Interrupt
    | ErrorMsg
    | UserTurn
    | ToolCall
    | ToolResult
    | Handoff
    | RawResponse
    | AgentPartial
    | AgentTurn
    | Dtmf
    | Event
    | MetricMsg
    | AudioFrame
    | AudioBatch
)

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Message)


def encode(msg: Message) -> bytes:
    """Bytes for a message that crosses a process boundary."""
    return _encoder.encode(msg)


def decode(data: bytes) -> Message:
    return _decoder.decode(data)


def is_control(msg: Message) -> bool:
    return type(msg).control
