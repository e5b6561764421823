"""The realtime target: the OpenAI Realtime API (GA and beta event dialects), in text or audio."""

from typing import Any, Literal

from tamesu.config.common import F
from tamesu.config.kinds import target_type
from tamesu.config.target_base import (
    SAY_AND_DATA,
    SPEECH,
    TalkingTarget,
    WithHeaders,
    WithMode,
    WithToolResults,
    WithTranscriptSource,
    WithTurnTimeout,
)

__all__ = ["RealtimeTarget"]


@target_type(
    "realtime",
    adapter="tamesu.targets.realtime.adapter:RealtimeAdapter",
    audio="mode",
    parts={"text": SAY_AND_DATA, "audio": SPEECH},
    summary="The OpenAI Realtime API (GA and beta event dialects), text or audio",
)
class RealtimeTarget(
    TalkingTarget, WithHeaders, WithMode, WithTranscriptSource, WithTurnTimeout, WithToolResults
):
    """A session of the OpenAI Realtime API (or a server speaking its events)."""

    type: Literal["realtime"] = F(
        "What kind of system this is; it decides which other keys apply.", "realtime"
    )
    url: str | None = F(
        "The websocket endpoint; OpenAI's Realtime API when unset.",
        "${AGENT_URL:-http://localhost:8080/chat}",
        default=None,
    )
    model: str | None = F("Sent as ?model= on the url.", "googleai/gemini-2.5-flash", default=None)
    session_update: dict[str, Any] | None = F(
        "Extra settings folded into the session.update event, such as instructions, tools, voice or output modalities.",
        {"instructions": "You are the support agent", "voice": "alloy"},
        default=None,
    )
    protocol: Literal["ga", "beta"] | None = F("The event dialect; ga when unset.", "ga", default=None)
    done_tool: str = F("A call of this function ends the conversation.", "end_session", default="end_session")
    audio_format: Literal["pcm16", "g711_ulaw", "g711_alaw"] = F(
        "Audio mode: the agent's output audio, pcm16 or G.711 at 8 kHz.", "pcm16", default="pcm16"
    )
