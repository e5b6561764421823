"""Every message that travels between the actors of a run, as one tagged msgspec union.

Control messages (session start/end, interrupt, error) jump the queue; data messages keep order.
Audio travels as PCM16 frames with a sequence number and a timestamp; between the stages of a
voice call (caller, line, transport, listener, recorder) it travels as one ``AudioBatch`` per
20 ms tick holding the frames of all the calls of a lane, never one message per frame per call,
and what a stage learns about one call (an utterance sent, the agent's speech, a mark played)
is a small message naming the call's slot.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import msgspec

from tamesu.kernel.events import TranscriptEvent

__all__ = [
    "AgentClear",
    "AgentMark",
    "AgentPartial",
    "AgentSpeech",
    "AgentTones",
    "AgentTurn",
    "AudioBatch",
    "AudioClip",
    "AudioFrame",
    "AudioSpan",
    "CallerSpoke",
    "Dtmf",
    "ErrorMsg",
    "Event",
    "Handoff",
    "Interrupt",
    "Listen",
    "MarksPlayed",
    "Message",
    "MetricMsg",
    "RawResponse",
    "SessionEnd",
    "SessionStart",
    "Tick",
    "ToolCall",
    "ToolResult",
    "UserTurn",
    "decode",
    "encode",
    "is_control",
]


class _Msg(msgspec.Struct, frozen=True, tag_field="type", kw_only=True, gc=False):
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
    retry_after: float | None = None
    """kind "capacity": the seconds the agent asked to wait before another session (Retry-After)."""


class FileRef(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    path: str | None = None
    uri: str | None = None
    name: str | None = None
    mime: str | None = None


class AudioClip(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Recorded speech a replayed caller says instead of synthesising the text: a WAV file, one
    channel of it (0 left, 1 right; None: a mono file), from ``start`` to ``end`` seconds (None:
    all of it)."""

    path: str
    channel: int | None = None
    start: float | None = None
    end: float | None = None


class UserTurn(_Msg, tag="user_turn", frozen=True):
    text: str = ""
    data: dict[str, Any] | None = None
    files: list[FileRef] = msgspec.field(default_factory=list)
    source: Literal["script", "simulator", "counterpart", "replay"] = "script"
    reasoning: str | None = None
    tactic: str | None = None
    """An attacker's turn: the tactic it uses (the recorder makes it a ``tactic`` event)."""
    speech_level_db: float = 0.0
    """On a call: the caller says this turn that many dB from its normal speech level (-20: a
    whisper); the background noise stays where normal speech puts it."""
    audio: AudioClip | None = None
    """On a call: the recorded speech to send as this turn (a replayed call); ``text`` is its transcript."""


class Listen(_Msg, tag="listen", frozen=True):
    """The user says nothing and hears the agent's next turn out: a ``wait_for`` not met yet on a
    call, where the agent goes on talking (a menu read out in parts)."""


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


class AudioSpan(msgspec.Struct, frozen=True, kw_only=True, gc=False):
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
    unread: str | None = None
    """Why the turn is empty though the agent answered: a response path matched nothing."""
    refusal: str | None = None
    """The agent refused the user turn at its protocol's level (not an HTTP status: that is ``status``)."""


class Dtmf(_Msg, tag="dtmf", frozen=True):
    digits: str
    direction: Literal["sent", "received"] = "sent"


class Event(_Msg, tag="event", frozen=True):
    """Something a target observed that belongs in the transcript's events (a call's recording, a
    turn's timings); the recorder appends ``event`` as it is."""

    event: TranscriptEvent


class MetricMsg(_Msg, tag="metric", frozen=True):
    name: str
    value: float


class AudioFrame(_Msg, tag="audio_frame", frozen=True):
    """One call's audio: the agent's, as its transport received it (any length), or one frame."""

    seq: int
    pcm: bytes
    """PCM16, little-endian."""
    sample_rate: int = 16000
    channel: Literal["caller", "agent"] = "caller"
    call: int = 0
    """The call's slot in its lane (see ``AudioBatch``)."""


class AudioBatch(_Msg, tag="audio_batch", frozen=True):
    """One 20 ms tick of every call of a lane (the calls that share a wire format and a line model):
    row ``i`` of ``pcm`` is the frame of the call in slot ``i``. One message per tick per lane,
    never one per call, so the signal work stays batched and a stage can sit in another process."""

    seq: int
    """The lane's tick."""
    pcm: bytes
    """``rows`` frames of ``encoding`` at ``sample_rate``, one after another."""
    rows: int
    calls: tuple[int, ...] = ()
    """The slots that hold a call (the other rows are silence)."""
    sample_rate: int = 16000
    encoding: str = "pcm16"
    channel: Literal["caller", "agent"] = "caller"


class Tick(_Msg, tag="tick", frozen=True):
    """The lane's clock: time for the next frame of every call (``at`` on the pump's clock)."""

    seq: int


class CallerSpoke(_Msg, tag="caller_spoke", frozen=True):
    """The caller stage sent (or stopped) an utterance of the call in slot ``call``: when its first
    sample went out and its speech spans, in seconds on the run's clock."""

    call: int
    start: float
    end: float
    spans: list[tuple[float, float]] = msgspec.field(default_factory=list)
    stopped: bool = False

    @property
    def speech_end(self) -> float:
        return self.spans[-1][1] if self.spans else self.start


class AgentSpeech(_Msg, tag="agent_speech", frozen=True):
    """The listener's VAD heard the agent of slot ``call`` start or stop speaking (``at``: when)."""

    call: int
    kind: Literal["speech_start", "speech_end"]


class AgentTones(_Msg, tag="agent_tones", frozen=True):
    """The listener heard keypad tones in the agent's audio of slot ``call``."""

    call: int
    digits: str


class AgentMark(_Msg, tag="agent_mark", frozen=True):
    """The agent marked its audio (Twilio ``mark``): due once the audio sent before it has played."""

    call: int
    name: str


class AgentClear(_Msg, tag="agent_clear", frozen=True):
    """The agent dropped the audio it had queued (Twilio ``clear``, an interruption)."""

    control: ClassVar[bool] = True
    call: int


class MarksPlayed(_Msg, tag="marks_played", frozen=True):
    """The audio before these marks of slot ``call`` has been played (or dropped by a clear)."""

    call: int
    names: list[str]


Message = (
    SessionStart
    | SessionEnd
    | Interrupt
    | ErrorMsg
    | UserTurn
    | Listen
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
    | Tick
    | CallerSpoke
    | AgentSpeech
    | AgentTones
    | AgentMark
    | AgentClear
    | MarksPlayed
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
