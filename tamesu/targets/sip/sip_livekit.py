"""A sip target's call placed through a LiveKit SIP trunk (``trunk_id`` / ``sip.outbound_trunk_id``).

tamesu creates the room (the target's ``room`` template) on the server of tamesu.yaml's
``livekit:`` block, joins it as the simulated caller with the ``livekit`` target's seat and audio
(``RoomLink``, ``RoomAudio``), and asks LiveKit's SIP service to dial ``to`` from ``from``
into the room (``CreateSIPParticipant``, waiting until answered, ringing for ``ring_timeout``,
``max_call_duration`` passed on). The SIP participant is the agent: its track is heard, the
caller's microphone is what the phone hears, keypad digits travel as SIP DTMF packets both ways.
A call that is not answered ends as the SIP status LiveKit reports says: 486 / 600 busy, 408 / 480
/ 487 no_answer, 603 agent, anything else error. The SIP participant leaving is the agent hanging
up; ``max_call_duration`` removes it (timeout), as the end of the run does.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import secrets
from typing import TYPE_CHECKING, Any

from tamesu.durations import parse_duration
from tamesu.errors import MissingExtraError, TargetError
from tamesu.kernel.messages import Dtmf, Message
from tamesu.templates import render_text

if TYPE_CHECKING:
    from tamesu.targets.livekit.livekit_audio import RoomAudio
    from tamesu.targets.livekit.livekit_link import RoomLink
    from tamesu.targets.sip.adapter import SipAdapter

__all__ = ["TrunkCall", "dial_through_livekit", "end_of"]

JOIN_TIMEOUT_S = 10.0
"""How long the answered call's participant has to appear in the room."""


def end_of(sip_code: int | None) -> str:
    """``call_ended_by`` for a call LiveKit could not connect, from the SIP status it reports."""
    if sip_code in (486, 600):
        return "busy"
    if sip_code in (408, 480, 487):
        return "no_answer"
    return "agent" if sip_code == 603 else "error"


async def dial_through_livekit(adapter: SipAdapter, trunk: str) -> None:
    """Place the adapter's call through ``trunk``; on return the adapter's session runs, or its
    call has ended (``report_end``) without one."""
    from tamesu.extras import missing_modules

    if missing_modules(["livekit.rtc", "livekit.api"]):
        raise MissingExtraError(
            "the livekit SDK and livekit-api (for sip targets with trunk_id)", extra="livekit"
        )
    adapter.trunk = call = TrunkCall(adapter, trunk)
    await call.start()


class TrunkCall:
    """One call through a LiveKit trunk: the room, the caller's seat in it and the SIP participant."""

    def __init__(self, adapter: SipAdapter, trunk: str) -> None:
        self.adapter = adapter
        self.trunk = trunk
        self.link: RoomLink | None = None
        self.audio: RoomAudio | None = None
        self.client: Any = None
        self.room = ""
        self.identity = f"sip-{secrets.token_hex(4)}"
        self.hanging_up = False
        self._tasks: list[asyncio.Task[None]] = []

    def _server(self) -> tuple[str, str, str]:
        ctx = self.adapter.ctx
        block = ctx.livekit
        url, key, secret = (getattr(block, k, None) for k in ("url", "api_key", "api_secret"))
        if not (url and key and secret):
            raise TargetError(
                "a sip target with trunk_id places its call through LiveKit: it needs livekit.url, "
                "livekit.api_key and livekit.api_secret in tamesu.yaml",
                retryable=False,
                kind="config",
            )
        key, secret = render_text(str(key), ctx.scope), render_text(str(secret), ctx.scope)
        ctx.redactor.add(secret)
        return render_text(str(url), ctx.scope), key, secret

    async def start(self) -> None:
        from livekit import api

        from tamesu.targets.livekit.adapter import api_url, mint_token
        from tamesu.targets.livekit.livekit_audio import RATE, RoomAudio
        from tamesu.targets.livekit.livekit_link import RoomLink
        from tamesu.voice.session import VoiceSession
        from tamesu.voice.settings import VoiceSettings

        adapter, ctx, config = self.adapter, self.adapter.ctx, self.adapter.config
        url, key, secret = self._server()
        self.room = render_text(config.room, ctx.scope)
        self.client = api.LiveKitAPI(api_url(url), key, secret)
        try:
            await self.client.room.create_room(api.CreateRoomRequest(name=self.room))
        except Exception as exc:
            raise TargetError(f"LiveKit could not create room {self.room}: {exc}") from None
        self.link = link = RoomLink(
            clock=ctx.clock, data_topic="lk.chat", agent_prefix=self.identity, max_chars=ctx.limits.turn_text
        )
        self.audio = audio = RoomAudio(link)
        settings = VoiceSettings.build(config, ctx, encoding="pcm16", rate=RATE)
        session = VoiceSession(settings, ctx, audio)
        audio.session = session
        caller = f"tamesu-sim-{secrets.token_hex(4)}"
        await link.connect(url, mint_token(key, secret, identity=caller, room=self.room))
        if not await self._dial(api):
            return
        await link.wait_for_agent(JOIN_TIMEOUT_S)
        await audio.publish()
        adapter.session = session
        await session.start()
        self._tasks.append(asyncio.ensure_future(self._relay()))
        if config.max_call_duration:
            limit = parse_duration(config.max_call_duration)
            self._tasks.append(asyncio.ensure_future(self._time_limit(limit)))

    async def _dial(self, api: Any) -> bool:
        """Ask LiveKit to call ``to``; False (the end reported) when the call was not answered."""
        adapter, ctx, config = self.adapter, self.adapter.ctx, self.adapter.config
        ring = parse_duration(config.ring_timeout) if config.ring_timeout else 30.0
        request = api.CreateSIPParticipantRequest(
            sip_trunk_id=self.trunk,
            sip_call_to=render_text(config.to or "", ctx.scope).replace(" ", ""),
            sip_number=render_text(config.from_, ctx.scope).replace(" ", "") if config.from_ else "",
            room_name=self.room,
            participant_identity=self.identity,
            participant_name="agent",
            wait_until_answered=True,
        )
        request.ringing_timeout.seconds = max(1, math.ceil(ring))
        if config.max_call_duration:
            request.max_call_duration.seconds = math.ceil(parse_duration(config.max_call_duration))
        try:
            await self.client.sip.create_sip_participant(request)
        except api.SipCallError as exc:
            code = exc.sip_status_code
            adapter.report_end(
                end_of(code), f"{code} {exc.sip_status or ''}".strip() if code else exc.message
            )
            return False
        except Exception as exc:
            raise TargetError(f"LiveKit could not place the call through trunk {self.trunk}: {exc}") from None
        return True

    def _note(self, msg: Message) -> None:
        session = self.adapter.session
        if session is not None:
            session.heard_message(msg, activity=False)

    async def _relay(self) -> None:
        """What the room says of the agent (its digits, its leaving) reaches the session."""
        link, session = self.link, self.adapter.session
        assert link is not None and session is not None
        while True:
            kind, value = await link.queue.get()
            if kind == "dtmf":
                self._note(Dtmf(digits=value, direction="received", at=self.adapter.ctx.clock.now()))
            elif kind == "text" and value.text:
                session.heard_transcript(value.text)
            elif kind == "caller_text" and value.text and value.final:
                session.heard_caller_transcript(value.text)
            elif kind == "left":
                if not self.hanging_up:
                    self.adapter.report_end("agent", "the SIP participant left the room")
                session.closed(1000, value)
                return

    async def _time_limit(self, seconds: float) -> None:
        await self.adapter.ctx.clock.sleep(seconds)
        self.adapter.report_end("timeout", f"max_call_duration {seconds:g}s")
        await self._hang_up()

    async def _hang_up(self) -> None:
        """Remove the SIP participant: LiveKit hangs the call up."""
        from livekit import api

        if self.hanging_up or self.client is None:
            return
        self.hanging_up = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(
                self.client.room.remove_participant(
                    api.RoomParticipantIdentity(room=self.room, identity=self.identity)
                ),
                5,
            )

    async def close(self) -> None:
        for task in self._tasks:
            if task is not asyncio.current_task():
                task.cancel()
        if self.link is not None and self.link.left is None:
            await self._hang_up()
        if self.audio is not None:
            await self.audio.close()
        link, self.link = self.link, None
        if link is not None:
            await link.close()
        client, self.client = self.client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.aclose()
