"""The pipecat target: a Pipecat bot's WebSocket transport (protobuf frames) or its small WebRTC
transport (an SDP offer over HTTP, audio over WebRTC), in text or audio."""

from typing import Literal

from tamesu.config.common import F, PositiveInt
from tamesu.config.kinds import target_type
from tamesu.config.target_base import (
    SAY_AND_DATA,
    SPEECH,
    TalkingTarget,
    WithHeaders,
    WithIdle,
    WithMode,
    WithToolResults,
    WithTranscriptSource,
    WithTurnTimeout,
)

__all__ = ["PipecatTarget"]


@target_type(
    "pipecat",
    adapter="tamesu.targets.pipecat.adapter:PipecatAdapter",
    audio="mode",
    parts={"text": SAY_AND_DATA, "audio": SPEECH},
    summary="A Pipecat bot's WebSocket or small WebRTC transport, text or audio",
)
class PipecatTarget(
    TalkingTarget, WithHeaders, WithMode, WithTranscriptSource, WithTurnTimeout, WithToolResults, WithIdle
):
    """A Pipecat bot reached on its websocket or its small WebRTC transport."""

    type: Literal["pipecat"] = F("What kind of system this is; it decides which other keys apply.", "pipecat")
    url: str = F(
        "The bot's websocket endpoint; with transport webrtc, the HTTP endpoint that takes its SDP offer.",
        "${AGENT_URL:-http://localhost:8080/chat}",
        "http://localhost:7860/api/offer",
    )
    transport: Literal["websocket", "webrtc"] = F(
        "How tamesu reaches the bot: its websocket transport (protobuf frames), or its small WebRTC "
        "transport (SmallWebRTC: the offer POSTed to url, audio as a WebRTC track, RTVI messages on "
        "the data channel; needs the webrtc extra).",
        "webrtc",
        default="websocket",
    )
    sample_rate: PositiveInt = F("Audio mode: samples per second on the transport.", 16000, default=16000)
