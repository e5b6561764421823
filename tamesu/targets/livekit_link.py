"""The simulated caller's seat in a LiveKit room, on the ``livekit`` SDK (rtc).

``RoomLink`` joins the room, recognises the agent (an identity prefix, or a participant of kind
agent), and turns what the agent does into plain callbacks and queue items: complete text
messages (text streams on the data topic or ``lk.transcription``, and user data packets on the
data topic), keypad digits (SIP DTMF packets), its audio track, and its leaving. Everything the
agent sends is bounded: a text longer than ``max_chars`` is cut there and reported, an item the
queue cannot take is counted and dropped, bytes that are not UTF-8 become a recorded error.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tamesu.errors import TargetError

__all__ = ["DTMF_CODES", "AgentText", "RoomLink"]

TRANSCRIPTION_TOPIC = "lk.transcription"
DTMF_CODES = {**{str(d): d for d in range(10)}, "*": 10, "#": 11, "A": 12, "B": 13, "C": 14, "D": 15}
"""SIP DTMF event codes (RFC 4733) by keypad digit."""
MAX_QUEUED = 4096
"""Items from the agent waiting for the turn that reads them; more are dropped and counted."""


@dataclass(frozen=True)
class AgentText:
    """One complete text the agent sent: the words, where they came from, and what was wrong."""

    text: str
    topic: str
    at: float
    final: bool = True
    problem: str = ""


class RoomLink:
    """One participant's connection to a room (see the module docstring)."""

    def __init__(
        self,
        *,
        clock: Any,
        data_topic: str,
        agent_prefix: str | None,
        max_chars: int,
        on_audio_track: Callable[[Any], None] | None = None,
    ) -> None:
        from livekit import rtc

        self.clock = clock
        self.data_topic = data_topic
        self.agent_prefix = agent_prefix
        self.max_chars = max_chars
        self.on_audio_track = on_audio_track
        self.room = rtc.Room()
        self.queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(MAX_QUEUED)
        """("text", AgentText) / ("caller_text", AgentText: the agent's transcript of our own track) /
        ("dtmf", digit) / ("left", reason) / ("raw", value) in arrival order."""
        self.dropped = 0
        self.agent: Any = None
        self.agent_joined = asyncio.Event()
        self.left: str | None = None
        self.own_tracks: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        room = self.room
        room.on("participant_connected", self._joined)
        room.on("participant_disconnected", self._left)
        room.on("sip_dtmf_received", self._dtmf)
        room.on("data_received", self._data)
        room.on("track_subscribed", self._track)
        room.on("disconnected", self._disconnected)
        for topic in dict.fromkeys((data_topic, TRANSCRIPTION_TOPIC)):
            room.register_text_stream_handler(topic, self._text_stream)

    def is_agent(self, participant: Any) -> bool:
        if self.agent_prefix:
            return str(participant.identity).startswith(self.agent_prefix)
        from livekit import rtc

        return bool(participant.kind == rtc.ParticipantKind.PARTICIPANT_KIND_AGENT)

    def _put(self, kind: str, value: Any) -> None:
        try:
            self.queue.put_nowait((kind, value))
        except asyncio.QueueFull:
            self.dropped += 1

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # The room's events.

    def _joined(self, participant: Any) -> None:
        if self.agent is None and self.is_agent(participant):
            self.agent = participant
            self.agent_joined.set()

    def _left(self, participant: Any) -> None:
        if self.agent is not None and participant.identity == self.agent.identity:
            self.left = "the agent left the room"
            self._put("left", self.left)

    def _disconnected(self, reason: Any = None) -> None:
        if self.left is None:
            self.left = f"the room closed ({reason})"
            self._put("left", self.left)

    def _from_agent(self, identity: str | None) -> bool:
        return self.agent is not None and identity == self.agent.identity

    def _dtmf(self, event: Any) -> None:
        if self._from_agent(getattr(event.participant, "identity", None)):
            digit = str(event.digit or "")[:1] or next(
                (d for d, c in DTMF_CODES.items() if c == event.code), "?"
            )
            self._put("dtmf", digit)

    def _data(self, packet: Any) -> None:
        if packet.topic != self.data_topic or not self._from_agent(
            getattr(packet.participant, "identity", None)
        ):
            return
        raw = bytes(packet.data[: self.max_chars * 4])
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            self._put(
                "text",
                AgentText("", packet.topic, self.clock.now(), problem="a data packet that is not UTF-8"),
            )
            return
        with contextlib.suppress(ValueError):
            body = json.loads(text)
            if isinstance(body, dict) and isinstance(body.get("message"), str):
                text = body["message"]
        self._put("text", self._bounded(text, packet.topic))

    def _bounded(self, text: str, topic: str, *, final: bool = True) -> AgentText:
        if len(text) > self.max_chars:
            return AgentText(
                text[: self.max_chars], topic, self.clock.now(), final, f"cut at {self.max_chars} characters"
            )
        return AgentText(text, topic, self.clock.now(), final)

    def _text_stream(self, reader: Any, identity: str) -> None:
        if self._from_agent(identity):
            self._spawn(self._read_stream(reader))

    async def _read_stream(self, reader: Any) -> None:
        info = reader.info
        attributes = dict(getattr(info, "attributes", None) or {})
        kind = "caller_text" if attributes.get("lk.transcribed_track_id") in self.own_tracks else "text"
        parts: list[str] = []
        size = 0
        async for chunk in reader:
            if size < self.max_chars:
                parts.append(chunk)
            size += len(chunk)
        final = attributes.get("lk.transcription_final", "true") != "false"
        self._put(kind, self._bounded("".join(parts), info.topic, final=final))

    def _track(self, track: Any, publication: Any, participant: Any) -> None:
        from livekit import rtc

        if self.is_agent(participant) and track.kind == rtc.TrackKind.KIND_AUDIO and self.on_audio_track:
            self.on_audio_track(track)

    # What the caller does.

    async def connect(self, url: str, token: str) -> None:
        from livekit import rtc

        try:
            await self.room.connect(url, token, rtc.RoomOptions(auto_subscribe=True))
        except Exception as exc:
            raise TargetError(f"could not join the LiveKit room at {url}: {exc}") from None
        for participant in self.room.remote_participants.values():
            self._joined(participant)

    async def wait_for_agent(self, timeout: float) -> None:
        try:
            await asyncio.wait_for(self.agent_joined.wait(), timeout)
        except asyncio.TimeoutError:
            who = f"identity {self.agent_prefix}*" if self.agent_prefix else "kind agent"
            raise TargetError(
                f"no agent ({who}) joined room {self.room.name} within {timeout:g}s", retryable=True
            ) from None

    async def send_text(self, text: str) -> None:
        assert self.agent is not None
        await self.room.local_participant.send_text(
            text, topic=self.data_topic, destination_identities=[self.agent.identity]
        )

    async def send_dtmf(self, digits: str) -> None:
        for digit in digits:
            code = DTMF_CODES.get(digit.upper())
            if code is None:
                raise TargetError(f"{digit!r} is not a keypad digit", retryable=False, kind="config")
            await self.room.local_participant.publish_dtmf(code=code, digit=digit.upper())

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await self.room.disconnect()
