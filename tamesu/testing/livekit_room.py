"""A room of the loopback LiveKit server: who is in it, what they publish, and where data goes.

A member is one signalling connection with its peer (``livekit_peer.Peer``). Joins and leaves
reach the others as participant updates; a published audio track is announced in an update and
then sent to every other member on its subscriber connection; a data packet (user data, SIP
DTMF, the chunks of text and byte streams) is stamped with the sender and delivered to its
destination identities, or to everyone else.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from livekit.protocol import models
from livekit.protocol import rtc as proto

from .livekit_peer import Peer
from .rtp_relay import AudioRelay

__all__ = ["Member", "Room", "sid"]

MAX_PARTICIPANTS = 64
"""Members one loopback room takes; more are refused (the server is for tests)."""


def sid(prefix: str) -> str:
    """A LiveKit-shaped id: a two-letter prefix, an underscore and 12 random characters."""
    return f"{prefix}_{secrets.token_hex(6)}"


@dataclass
class Member:
    """One participant: its info as the room tells others, its signalling, its peer."""

    info: models.ParticipantInfo
    send: Callable[[proto.SignalResponse], Awaitable[None]]
    peer: Peer | None = None
    tracks: dict[str, AudioRelay] = field(default_factory=dict)
    """The audio tracks it publishes, by track sid."""
    pending: dict[str, models.TrackInfo] = field(default_factory=dict)
    """Tracks announced (add_track) whose media has not arrived yet, by the client's track id."""

    @property
    def identity(self) -> str:
        return self.info.identity

    def describe(self, *, metadata: str, name: str, attributes: Mapping[str, str]) -> None:
        """Apply a metadata update (the participant's own or the room service's): empty values keep
        metadata and name; an attribute set to "" is removed."""
        if metadata:
            self.info.metadata = metadata
        if name:
            self.info.name = name
        for key, value in attributes.items():
            if value:
                self.info.attributes[key] = value
            else:
                self.info.attributes.pop(key, None)


class Room:
    """One room: members, their tracks, the data between them (see the module docstring)."""

    def __init__(self, name: str, *, metadata: str = "") -> None:
        self.name = name
        self.sid = sid("RM")
        self.metadata = metadata
        self.created = int(time.time())
        self.members: dict[str, Member] = {}
        self.data_log: list[models.DataPacket] = []
        """Every data packet the room carried, in order (tests read it)."""
        self.changed = asyncio.Condition()
        self._tasks: set[asyncio.Task[None]] = set()

    def info(self) -> models.Room:
        return models.Room(
            sid=self.sid,
            name=self.name,
            metadata=self.metadata,
            creation_time=self.created,
            num_participants=len(self.members),
            num_publishers=sum(1 for m in self.members.values() if m.tracks),
        )

    async def _notify(self) -> None:
        async with self.changed:
            self.changed.notify_all()

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def join(self, member: Member) -> list[models.ParticipantInfo]:
        """Add ``member``; the others are told. Returns who was there already."""
        if len(self.members) >= MAX_PARTICIPANTS:
            raise ValueError(f"room {self.name} is full")
        if member.identity in self.members:
            await self.leave(self.members[member.identity], reason=models.DisconnectReason.DUPLICATE_IDENTITY)
        others = [m.info for m in self.members.values()]
        self.members[member.identity] = member
        await self._broadcast(
            proto.SignalResponse(update=proto.ParticipantUpdate(participants=[member.info])), member
        )
        for other in list(self.members.values()):
            for track_sid, track in other.tracks.items():
                if other is not member:
                    self._spawn(self._forward(other, member, track_sid, track))
        await self._notify()
        return others

    async def leave(self, member: Member, *, reason: int = models.DisconnectReason.CLIENT_INITIATED) -> None:
        if self.members.get(member.identity) is not member:
            return
        del self.members[member.identity]
        gone = models.ParticipantInfo()
        gone.CopyFrom(member.info)
        gone.state = models.ParticipantInfo.DISCONNECTED
        gone.disconnect_reason = reason  # type: ignore[assignment]
        await self._broadcast(
            proto.SignalResponse(update=proto.ParticipantUpdate(participants=[gone])), member
        )
        for relay in member.tracks.values():
            relay.end()
        if member.peer is not None:
            await member.peer.close()
        await self._notify()

    async def remove(self, identity: str) -> bool:
        """Take a participant out of the room (RoomService.RemoveParticipant): it is told to leave."""
        member = self.members.get(identity)
        if member is None:
            return False
        with contextlib.suppress(Exception):
            await member.send(
                proto.SignalResponse(
                    leave=proto.LeaveRequest(
                        reason=models.DisconnectReason.PARTICIPANT_REMOVED,
                        action=proto.LeaveRequest.DISCONNECT,
                    )
                )
            )
        await self.leave(member, reason=models.DisconnectReason.PARTICIPANT_REMOVED)
        return True

    async def _broadcast(self, response: proto.SignalResponse, skip: Member | None = None) -> None:
        for other in list(self.members.values()):
            if other is not skip:
                with contextlib.suppress(Exception):
                    await other.send(response)

    async def update(self, member: Member) -> None:
        """``member``'s info changed (metadata, attributes, tracks): everyone is told."""
        member.info.version += 1
        await self._broadcast(
            proto.SignalResponse(update=proto.ParticipantUpdate(participants=[member.info]))
        )
        await self._notify()

    def add_track(self, member: Member, request: proto.AddTrackRequest) -> models.TrackInfo:
        """A track announced before its media: its sid, as the client's ``track_published`` reads it."""
        track = models.TrackInfo(
            sid=sid("TR"),
            type=request.type,
            name=request.name,
            source=request.source,
            muted=request.muted,
            mime_type="audio/opus" if request.type == models.AUDIO else "",
            stream=request.stream,
        )
        member.pending[request.cid] = track
        return track

    def media_arrived(self, member: Member, track: AudioRelay) -> None:
        """The media of a track ``member`` announced arrived on its publisher connection."""
        info = member.pending.pop(track.id, None)
        if info is None and member.pending:
            info = member.pending.pop(next(iter(member.pending)))
        if info is None:
            return
        member.info.tracks.append(info)
        member.tracks[info.sid] = track
        self._spawn(self._publish(member, info.sid, track))

    async def _publish(self, member: Member, track_sid: str, track: AudioRelay) -> None:
        await self.update(member)
        for other in list(self.members.values()):
            if other is not member:
                await self._forward(member, other, track_sid, track)

    async def _forward(self, source: Member, to: Member, track_sid: str, track: AudioRelay) -> None:
        """Send ``source``'s track to ``to``, and tell ``source`` it has a subscriber (as LiveKit does:
        LiveKit Agents hold their speech until their track is subscribed)."""
        if to.peer is None:
            return
        with contextlib.suppress(Exception):
            await to.peer.subscribe(track, participant_sid=source.info.sid, track_sid=track_sid)
            await source.send(
                proto.SignalResponse(track_subscribed=proto.TrackSubscribed(track_sid=track_sid))
            )

    def data(self, member: Member, packet: models.DataPacket, *, reliable: bool) -> None:
        """Deliver one data packet from ``member`` to its destinations."""
        packet.participant_identity = member.identity
        packet.participant_sid = member.info.sid
        self.send_data(packet, reliable=reliable, sender=member)

    def send_data(
        self, packet: models.DataPacket, *, reliable: bool = True, sender: Member | None = None
    ) -> int:
        """Send ``packet`` to its destination identities, or every member but the sender; how many got it."""
        self.data_log.append(packet)
        wanted = set(packet.destination_identities)
        raw = packet.SerializeToString()
        sent = 0
        for other in list(self.members.values()):
            if other is sender or (wanted and other.identity not in wanted) or other.peer is None:
                continue
            sent += other.peer.send_data(raw, reliable=reliable)
        self._spawn(self._notify())
        return sent

    async def close(self) -> None:
        for member in list(self.members.values()):
            await self.remove(member.identity)
        for task in list(self._tasks):
            task.cancel()
