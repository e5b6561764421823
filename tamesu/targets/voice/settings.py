"""The voice target: a generic voice WebSocket (PCM16, µ-law or A-law, binary or JSON frames)."""

from typing import Any, Literal

from pydantic import ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from tamesu.config.common import ConfigModel, F, PositiveInt
from tamesu.config.kinds import target_type
from tamesu.config.target_base import (
    SPEECH,
    TalkingTarget,
    WithHeaders,
    WithIdle,
    WithTranscriptSource,
    WithTurnTimeout,
)

__all__ = ["VoiceAudio", "VoiceMessages", "VoiceTarget"]


class VoiceAudio(ConfigModel):
    """How audio travels on a voice target's websocket."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": ["frames"], "properties": {"frames": {"const": "json"}}},
                {"properties": {"send": {"type": "null"}, "receive": {"type": "null"}}},
            ]
        }
    )

    encoding: Literal["pcm16", "mulaw", "alaw"] = F("Encoding on the wire.", "mulaw", default="pcm16")
    sample_rate: PositiveInt | None = F(
        "Samples per second; 16000 for pcm16 and 8000 for mulaw and alaw when unset.", 8000, default=None
    )
    frames: Literal["binary", "json"] = F(
        "binary: each chunk is one binary frame; json: each chunk is base64 inside a JSON message (see send "
        "and receive).",
        "json",
        default="binary",
    )
    send: Any = F(
        "frames json: the message sent per outgoing chunk; {{audio}} is the base64 chunk.",
        {"user_audio_chunk": "{{audio}}"},
        default=None,
    )
    receive: str | None = F(
        "frames json: JSONPath of the base64 audio in an incoming message, applied to a one-element list.",
        "$[*].audio_event.audio_base_64",
        default=None,
    )

    @model_validator(mode="after")
    def _json_frames(self) -> "VoiceAudio":
        if self.frames != "json" and (self.send is not None or self.receive is not None):
            raise PydanticCustomError("voice_frames", "send and receive apply to frames: json")
        return self


class VoiceMessages(ConfigModel):
    """The JSON control messages of a voice target's protocol; every one is optional."""

    open: Any = F(
        "A message sent once after connecting.",
        {"type": "start", "call_id": "{{session.call_id}}"},
        default=None,
    )
    transcript: str | None = F(
        "JSONPath of the agent's final words in a message (applied to a one-element list); without it the "
        "agent's audio is transcribed.",
        "$[?(@.type=='transcript' && @.role=='assistant' && @.transcriptType=='final')].transcript",
        default=None,
    )
    caller_transcript: str | None = F(
        "JSONPath of the agent's own transcript of the caller in a message: a failure is then marked heard differently when the agent misheard.",
        "$[?(@.type=='transcript' && @.role=='user' && @.transcriptType=='final')].transcript",
        default=None,
    )
    done: str | None = F(
        "JSONPath truthy on the message marking the end of the call.",
        "$[?(@.type=='status-update' && @.status=='ended')].status",
        default=None,
    )
    interrupted: str | None = F(
        "JSONPath that is truthy when the agent stopped talking because the caller did.",
        "$[?(@.type=='user-interrupted')].type",
        default=None,
    )
    tool_calls: str | None = F(
        "JSONPath of the tool calls in a message: names, or objects with name/args (or function.name/arguments).",
        "$[?(@.type=='tool-calls')].toolCallList[*]",
        default=None,
    )
    dtmf: Any = F(
        "A message sent per keypad digit ({{digit}} renders); without it dtmf steps are recorded as unsupported.",
        {"type": "dtmf", "digit": "{{digit}}"},
        default=None,
    )
    close: Any = F(
        "A message sent before closing the connection (a hangup).", {"type": "hangup"}, default=None
    )


@target_type(
    "voice",
    adapter="tamesu.targets.voice.adapter:VoiceAdapter",
    audio="always",
    parts={"audio": SPEECH},
    summary="A generic voice WebSocket (PCM16 / µ-law / A-law, binary or JSON frames)",
)
class VoiceTarget(TalkingTarget, WithHeaders, WithTranscriptSource, WithTurnTimeout, WithIdle):
    """An agent that takes the caller's audio on a websocket and answers in audio."""

    type: Literal["voice"] = F("What kind of system this is; it decides which other keys apply.", "voice")
    url: str = F("The agent's websocket endpoint.", "${AGENT_URL:-http://localhost:8080/chat}")
    audio: VoiceAudio | None = F(
        "How audio travels: encoding, sample rate, binary or JSON frames.",
        {"encoding": "pcm16", "sample_rate": 16000, "frames": "binary"},
        default=None,
    )
    messages: VoiceMessages | None = F(
        "The protocol's JSON control messages (open, transcript, done, interrupted, tool_calls, dtmf, close).",
        {
            "transcript": "$[?(@.type=='transcript' && @.role=='assistant')].transcript",
            "done": "$[?(@.type=='status-update' && @.status=='ended')].status",
            "close": {"type": "hangup"},
        },
        default=None,
    )
