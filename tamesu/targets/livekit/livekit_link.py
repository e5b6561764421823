"""The simulated caller's seat in a LiveKit room, on the ``livekit`` SDK (rtc).

``RoomLink`` joins the room, recognises the agent (an identity prefix, or a participant of kind
agent), and turns what the agent does into plain callbacks and queue items: complete text
messages (text streams on the data topic or ``lk.transcription``, and user data packets on the
data topic), keypad digits (SIP DTMF packets), its audio track, and its leaving; and, from a
LiveKit Agents session (which publishes its events to the room as ``lk.agent.session`` byte
streams), the function tools it ran and its state (``lk.agent.state``: listening, thinking,
speaking), so a suite can assert ``tool_called``. Everything the agent sends is bounded: a text longer than ``max_chars`` is cut there and reported, an item the
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
STATE_ATTRIBUTE = "lk.agent.state"
SESSION_TOPIC = "lk.agent.session"
"""Where a LiveKit Agents ``AgentSession`` publishes its events (``agent_session.AgentSessionMessage``)."""
MAX_SESSION_BYTES = 1 << 18
"""The largest session event read; a bigger one is skipped and reported."""
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
        ("dtmf", digit) / ("left", reason) / ("tool", ToolCall) / ("tool_result", ToolResult) /
        ("problem", text) in arrival order."""
        self.dropped = 0
        self.agent: Any = None
        self.agent_joined = asyncio.Event()
        self.left: str | None = None
        self.own_tracks: set[str] = set()
        self.state = ""
        """The agent's ``lk.agent.state`` as its session last reported it."""
        self.on_state: Callable[[str], None] | None = None
        self.state_changed = asyncio.Event()
        """Set at each change of ``state`` (whoever waits on it clears it)."""
        self._tasks: set[asyncio.Task[None]] = set()
        room = self.room
        room.on("participant_connected", self._joined)
        room.on("participant_disconnected", self._left)
        room.on("sip_dtmf_received", self._dtmf)
        room.on("data_received", self._data)
        room.on("track_subscribed", self._track)
        room.on("disconnected", self._disconnected)
        room.on("participant_attributes_changed", self._attributes)
        for topic in dict.fromkeys((data_topic, TRANSCRIPTION_TOPIC)):
            room.register_text_stream_handler(topic, self._text_stream)
        room.register_byte_stream_handler(SESSION_TOPIC, self._session_stream)

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
            state = dict(getattr(participant, "attributes", None) or {}).get(STATE_ATTRIBUTE)
            if state:
                self._state(str(state)[:40])

    @property
    def runs_agents(self) -> bool:
        """Whether the agent is a LiveKit Agents job (its worker named it ``lk.agent.name``, or it has a state)."""
        attributes = dict(getattr(self.agent, "attributes", None) or {})
        return bool(self.state) or "lk.agent.name" in attributes or STATE_ATTRIBUTE in attributes

    def _attributes(self, changed: Any, participant: Any) -> None:
        if self._from_agent(getattr(participant, "identity", None)) and STATE_ATTRIBUTE in changed:
            self._state(str(changed[STATE_ATTRIBUTE])[:40])

    def _state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.state_changed.set()
            if self.on_state is not None:
                self.on_state(state)

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
        cut = ""
        try:
            async for chunk in reader:
                if size < self.max_chars:
                    parts.append(chunk)
                size += len(chunk)
        except Exception as exc:  # the agent left mid-stream (the SDK's StreamError): keep what came
            cut = f"the text stream ended early: {str(exc)[:200]}"
        attributes = dict(getattr(info, "attributes", None) or {})  # the trailer's, once the stream ended
        final = bool(cut) or attributes.get("lk.transcription_final", "true") != "false"
        text = self._bounded("".join(parts), info.topic, final=final)
        if cut:
            text = AgentText(
                text.text, text.topic, text.at, final, "; ".join(p for p in (text.problem, cut) if p)
            )
        self._put(kind, text)

    def _session_stream(self, reader: Any, identity: str) -> None:
        if self._from_agent(identity):
            self._spawn(self._read_session(reader))

    async def _read_session(self, reader: Any) -> None:
        from .livekit_session import session_items

        parts: list[bytes] = []
        size = 0
        try:
            async for chunk in reader:
                size += len(chunk)
                if size <= MAX_SESSION_BYTES:
                    parts.append(bytes(chunk))
        except Exception:  # the agent left mid-event: the event is incomplete, nothing to read
            return
        if size > MAX_SESSION_BYTES:
            self._put("problem", f"a session event of {size} bytes (over {MAX_SESSION_BYTES}) was skipped")
            return
        for kind, value in session_items(b"".join(parts), self.max_chars):
            if kind == "state":
                self._state(value)
            else:
                self._put(kind, value)

    def _track(self, track: Any, publication: Any, participant: Any) -> None:
        from livekit import rtc

        if self.is_agent(participant) and track.kind == rtc.TrackKind.KIND_AUDIO and self.on_audio_track:
            self.on_audio_track(track)

    async def settle(self, timeout: float) -> None:
        """Wait up to ``timeout`` for the streams being read to end (the agent left: what it sent last)."""
        reading = [t for t in self._tasks if not t.done()]
        if reading:
            await asyncio.wait(reading, timeout=timeout)

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
        try:
            await self.room.local_participant.send_text(
                text, topic=self.data_topic, destination_identities=[self.agent.identity]
            )
        except Exception as exc:  # the room or the agent is gone: the SDK raises its own errors
            raise TargetError(f"could not send the turn to the agent: {exc}") from None

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
