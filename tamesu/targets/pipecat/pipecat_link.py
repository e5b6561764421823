"""How the pipecat target reaches its bot: what both transports offer, and the websocket one.

The adapter (``pipecat``) and its audio mode (``pipecat_audio``) speak RTVI and move audio without
knowing the transport: a ``PipecatLink`` reads the bot's RTVI messages (dicts) and frames
(``WireFrame``) from its ``Inbox`` and sends RTVI messages and the caller's audio. The websocket
transport (``PipecatSocket``) carries both in Pipecat's protobuf frames; the small WebRTC one
(``pipecat_webrtc.PipecatPeer``) carries RTVI on a data channel and audio as a WebRTC track.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from tamesu.limits import decode_json
from tamesu.targets.pipecat.pipecat_wire import audio_frame, decode_frame, message_frame, transcription_frame
from tamesu.wire.wslink import Closed, WsLink, http_to_ws

if TYPE_CHECKING:
    import asyncio

    from tamesu.targets.base import TargetContext
    from tamesu.wire.connect import ConnectPolicy

__all__ = ["PipecatLink", "PipecatSocket", "decode_item"]

USER_ID = "tamesu"


class PipecatLink(Protocol):
    """One session's transport to a Pipecat bot."""

    url: str
    medium: str
    """What the session runs over, for messages: "websocket", "WebRTC connection"."""
    queue: asyncio.Queue[Any]
    closed: Closed | None

    async def open(
        self,
        policy: ConnectPolicy,
        headers: dict[str, str],
        *,
        ready: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Connect (retried per ``connect:``), then ``ready()``: the adapter's RTVI handshake."""

    async def next(self, timeout: float) -> Any:
        """The next item, or ``Closed`` (kept queued); ``asyncio.TimeoutError`` after ``timeout``."""

    def drain(self) -> list[Any]:
        """Items that arrived between turns."""

    async def send_message(self, message: dict[str, Any]) -> None:
        """Send one RTVI message."""

    async def send_transcription(self, text: str) -> None:
        """The user's words for a bot without RTVI."""

    def send_audio(self, pcm: bytes, rate: int) -> None:
        """Queue one frame of the caller's audio (mono PCM16 at ``rate``); never blocks."""

    async def close(self) -> None:
        """Hang up; safe to call more than once."""


def decode_item(frame: str | bytes, depth: int) -> Any:
    """Protobuf frames; a ``MessageFrame`` holding RTVI JSON becomes that JSON."""
    wire = decode_frame(frame)
    if wire is None or wire.kind != "message":
        return wire
    try:
        return decode_json(wire.get("data", ""), depth)
    except ValueError:
        return wire


class PipecatSocket(WsLink):
    """Pipecat's websocket transport with the protobuf serializer: RTVI in ``MessageFrame``s."""

    medium = "websocket"

    def __init__(self, ctx: TargetContext, url: str) -> None:
        super().__init__(ctx, http_to_ws(url), decode=partial(decode_item, depth=ctx.limits.json_depth))

    async def send_message(self, message: dict[str, Any]) -> None:
        await self.send(message_frame(message))

    async def send_transcription(self, text: str) -> None:
        stamp = datetime.now(timezone.utc).isoformat()
        await self.send(transcription_frame(text, user_id=USER_ID, timestamp=stamp))

    def send_audio(self, pcm: bytes, rate: int) -> None:
        self.queue_send(audio_frame(pcm, rate))
