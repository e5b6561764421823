"""The ``sip`` target: a real phone call to (outbound) or from (inbound) the agent over SIP.

tamesu's own user agent (``tamesu.sip``) places or answers the call; its RTP stream is the call's
wire in the voice stages (``tamesu.voice``), so the caller's voice, noise, line model, pauses,
barge-in, DTMF, recordings and voice metrics work as on every audio target. Keypad digits go out
as RFC 4733 telephone-events when the agent's SDP offers them, else as in-band tones; the agent's
digits arrive either way (events, INFO, or tones heard in its audio).

``to`` is a SIP URI (``sip:agent@10.0.0.7:5080;transport=tcp``, called directly) or an E.164
number, called as ``sip:NUMBER@PROXY`` through ``sip.proxy`` in tamesu.yaml, answering its digest
challenges with ``sip.username`` / ``sip.password``. Inbound, tamesu listens where
``sip.inbound_number`` says (``config.sip_inbound``); ``{{sip.inbound_number}}`` renders to the
number and ``{{sip.inbound_uri}}`` to the URI, and the ``trigger`` makes the agent call it.
With ``trunk_id`` (or ``sip.outbound_trunk_id``) the call goes through LiveKit's SIP API instead
(``sip_livekit``). The call's SIP dialogue is kept in the transcript's events (``SipTrace``), how
it ended as ``CallEnded`` and a REFER as ``CallTransferred``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from tamesu.durations import parse_duration
from tamesu.errors import CapacityRefused, TargetError
from tamesu.kernel.events import CallEnded, CallHeld, CallTransferred, SipTrace
from tamesu.kernel.messages import AgentTurn, Dtmf, Event, Message, UserTurn
from tamesu.targets.base import TargetAdapter, target
from tamesu.targets.sip.settings import SipTarget
from tamesu.templates import render_text
from tamesu.untrusted import printable

if TYPE_CHECKING:
    from tamesu.config.project import SipConfig
    from tamesu.sip.call import Credentials, SipCall
    from tamesu.sip.message import SipMessage
    from tamesu.sip.sockets import Peer
    from tamesu.sip.ua import UserAgent
    from tamesu.targets.base import TargetContext
    from tamesu.targets.sip.sip_livekit import TrunkCall
    from tamesu.voice.session import VoiceSession
    from tamesu.voice.silence import SilenceGate

__all__ = ["RATE", "SipAdapter", "local_address"]

RATE = 8000
DEFAULT_RING = 30.0
MAX_TRACE = 300
"""SIP messages of one call kept in the transcript; later ones are counted, not kept."""


def local_address(host: str, port: int) -> str:
    """The address of this machine that routes to ``host`` (no packet is sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((host, port))
            return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"


@target("sip", config=SipTarget)
class SipAdapter(TargetAdapter):
    """One phone call; see the module docstring."""

    config: SipTarget

    agent_speaks_first = True

    @property
    def hears_unprompted(self) -> bool:
        return True

    def __init__(self, config: SipTarget, ctx: TargetContext) -> None:
        super().__init__(config, ctx)
        self.ua: UserAgent | None = None
        self.call: SipCall | None = None
        self.session: VoiceSession | None = None
        self.early: list[Message] = []
        """What happened before the call's audio began (its dialogue so far, how it ended)."""
        self.trunk: TrunkCall | None = None
        """The call placed through a LiveKit trunk (``sip_livekit``); None for tamesu's own UA."""
        self.traced = 0
        self.ended_reported = False
        self._timer: asyncio.Task[None] | None = None
        self._decode: Any = None
        self._audible = b""
        """Per G.711 code, 1 when its sample is louder than the gate's peak (a ``bytes.translate`` table)."""
        self._gate: SilenceGate | None = None

    @property
    def project(self) -> SipConfig | None:
        return self.ctx.sip

    def _setting(self, name: str) -> str | None:
        value = getattr(self.project, name, None) if self.project is not None else None
        return render_text(str(value), self.ctx.scope) if value is not None else None

    async def start(self) -> None:
        ctx = self.ctx
        ctx.scope.set("session", ctx.session)
        trunk = self.config.trunk_id or getattr(self.project, "outbound_trunk_id", None)
        try:
            if trunk and self.config.direction == "outbound":
                from tamesu.targets.sip.sip_livekit import dial_through_livekit

                await dial_through_livekit(self, render_text(trunk, ctx.scope))
                return
            if self.config.direction == "outbound":
                await self._dial()
            else:
                await self._await_call()
            call = self.call
            if call is not None and call.state == "connected":
                await self._start_audio(call)
                if self.config.max_call_duration:
                    limit = parse_duration(self.config.max_call_duration)
                    self._timer = asyncio.get_running_loop().create_task(self._time_limit(limit))
        except TargetError as exc:
            await self.stop()
            raise self.redacted(exc) from None
        except OSError as exc:
            await self.stop()
            raise self.redacted(TargetError(f"the SIP call: {exc}")) from None

    # Placing and answering.

    def _credentials(self) -> Credentials | None:
        from tamesu.sip.call import Credentials

        user, password = self._setting("username"), self._setting("password")
        return Credentials(user, password or "") if user else None

    async def _open_ua(self, host: str, port: int = 0, *, tcp: bool) -> UserAgent:
        from tamesu.sip.ua import UserAgent

        self.ua = UserAgent(host)
        await self.ua.open(port, tcp=tcp)
        return self.ua

    async def _new_call(self, peer: Peer, *, call_id: str, local: Any, remote: Any) -> SipCall:
        from tamesu.sip.call import SipCall
        from tamesu.sip.rtp import RtpStream

        assert self.ua is not None
        rtp = await RtpStream.open(self.ua.host, on_audio=self._heard_audio, on_digit=self._heard_digit)
        call = SipCall(
            self.ua,
            rtp,
            peer=peer,
            call_id=call_id,
            local=local,
            remote=remote,
            credentials=self._credentials(),
        )
        call.on_trace = self._trace
        call.on_transfer = self._transferred
        call.on_hold = self._held
        call.on_end = self._ended
        self.call = call
        return call

    async def _dial(self) -> None:
        from tamesu.sip.call import peer_of
        from tamesu.sip.message import NameAddr, SipParseError, SipUri
        from tamesu.sip.ua import new_tag

        scope = self.ctx.scope
        to = render_text(self.config.to or "", scope).strip()
        try:
            if to.lower().startswith(("sip:", "sips:")):
                uri = SipUri.parse(to)
                peer = peer_of(uri)
                request_uri = str(uri)
            else:
                proxy = self._setting("proxy")
                if not proxy:
                    raise TargetError(
                        f"to {to!r} is a number: calling it needs sip.proxy in tamesu.yaml (or write to as a SIP URI)",
                        retryable=False,
                        kind="config",
                    )
                via = SipUri.parse(proxy)
                peer = peer_of(via)
                number = to.replace(" ", "")
                request_uri = str(
                    SipUri(
                        via.scheme,
                        number,
                        via.host,
                        via.port,
                        {"user": "phone"} if number.startswith("+") else {},
                    )
                )
        except SipParseError as exc:
            raise TargetError(f"sip target to: {exc}", retryable=False, kind="config") from None
        host = self._setting("bind") or local_address(peer.host, peer.port)
        await self._open_ua(host, tcp=False)
        caller = render_text(self.config.from_, scope).replace(" ", "") if self.config.from_ else "tamesu"
        local = NameAddr(f"sip:{caller}@{host}", params={"tag": new_tag()})
        remote = NameAddr(request_uri)
        call = await self._new_call(peer, call_id=f"{uuid.uuid4().hex}@{host}", local=local, remote=remote)
        ring = parse_duration(self.config.ring_timeout) if self.config.ring_timeout else DEFAULT_RING
        await call.dial(request_uri, ring_timeout=ring)
        if call.unreachable:
            raise TargetError(f"the SIP call to {request_uri}: {call.end_detail}")
        if call.full:
            raise CapacityRefused(
                f"the agent at {request_uri} refused the call for capacity ({call.end_detail})",
                retry_after=call.retry_after,
            )

    async def _await_call(self) -> None:
        """Listen, have the trigger make the agent call, and answer its INVITE."""
        from tamesu.config.sip_inbound import inbound_address
        from tamesu.sip.call import callee_ends
        from tamesu.sip.ua import new_tag

        try:
            address = inbound_address(
                self._setting("inbound_number"),
                bind=self._setting("bind"),
                port=getattr(self.project, "inbound_port", None),
            )
        except ValueError as exc:
            raise TargetError(f"sip.{exc}", retryable=False, kind="config") from None
        host = address.host or "127.0.0.1"
        ua = await self._open_ua(host, address.port or 0, tcp=True)
        uri = address.uri(host, ua.port)
        self.ctx.scope.set("sip", {"inbound_number": address.number, "inbound_uri": uri})
        invites: asyncio.Queue[tuple[SipMessage, Peer]] = asyncio.Queue(1)

        def incoming(msg: SipMessage, peer: Peer) -> None:
            if invites.empty() and self.call is None:
                invites.put_nowait((msg, peer))
            else:
                ua.spawn(ua.respond(msg, peer, 486, "Busy Here", tag=new_tag()))

        ua.on_invite = incoming
        await self._trigger()
        ring = parse_duration(self.config.ring_timeout) if self.config.ring_timeout else DEFAULT_RING
        try:
            invite, peer = await asyncio.wait_for(invites.get(), ring)
        except asyncio.TimeoutError:
            self.report_end("no_answer", f"the agent did not call {uri} within {ring:g}s")
            return
        local, remote = callee_ends(invite)
        call = await self._new_call(peer, call_id=invite.call_id, local=local, remote=remote)
        self._trace("received", invite)  # it came before its call existed
        await call.answer(invite, peer)

    async def _trigger(self) -> None:
        from tamesu.config.common import Hook
        from tamesu.hook_call import run_hook

        trigger = self.config.trigger
        if trigger is None:
            raise TargetError("an inbound sip target needs trigger", retryable=False, kind="config")
        hook = Hook(command=trigger.command) if trigger.command else Hook(http=trigger.http)
        outcome = await run_hook(
            hook,
            scope=self.ctx.scope,
            env={"TAMESU_SESSION": self.ctx.session, "TAMESU_RUN_ID": self.ctx.run_id},
            suite_dir=self.ctx.suite_dir,
            http=self.ctx.http,
            redactor=self.ctx.redactor,
        )
        if not outcome.ok:
            raise TargetError(f"the sip trigger ({outcome.hook}) failed: {outcome.message}")

    # The call's audio.

    async def _start_audio(self, call: SipCall) -> None:
        from tamesu.audio.codec import alaw_decode, ulaw_decode
        from tamesu.voice.session import VoiceSession
        from tamesu.voice.settings import VoiceSettings
        from tamesu.voice.silence import SilenceGate

        self._decode = ulaw_decode if call.encoding == "mulaw" else alaw_decode
        self._gate = SilenceGate()
        levels = self._decode(bytes(range(256)))
        self._audible = bytes(int(abs(int(v)) > self._gate.peak) for v in levels)
        settings = VoiceSettings.build(self.config, self.ctx, encoding=call.encoding, rate=RATE)
        self.session = VoiceSession(settings, self.ctx, self)
        await self.session.start()

    def send_audio(self, payload: bytes) -> None:
        call = self.call
        if call is not None:
            call.rtp.send(payload)

    def marks_played(self, names: list[str]) -> None:
        """SIP has no marks."""

    async def send_dtmf(self, digits: str) -> bool:
        call = self.call
        if call is None or not call.dtmf_events or call.state != "connected":
            return False
        keyed = call.rtp.key(digits)
        await keyed.wait()
        return True

    def _heard_audio(self, payload: bytes) -> None:
        """A frame of the agent. RTP flows all call long, silence included, and arrives at the pace
        it plays: the call's ``SilenceGate`` passes on sound and a short tail after it, so the
        playout runs empty and the agent's turn can end when it falls quiet. A
        frame's silence is told from its G.711 codes (one ``bytes.translate``), without decoding."""
        session, gate = self.session, self._gate
        if session is None or gate is None or self._decode is None or not payload:
            return
        quiet = b"\x01" not in payload.translate(self._audible)
        # not ``playing``: frames arrive at the pace they play, so a pause is kept by their timing,
        # and keeping silence while a few frames wait in the playout would keep it from running empty
        if gate.keep(quiet, len(payload) / RATE):
            session.heard_audio(self._decode(payload))

    def _heard_digit(self, digit: str) -> None:
        msg = Dtmf(digits=digit, direction="received", at=self.ctx.clock.now())
        if self.session is not None:
            self.session.heard_message(msg)
        else:
            self.early.append(msg)

    # What the dialog reports.

    def _note(self, msg: Message) -> None:
        if self.session is not None:
            self.session.heard_message(msg, activity=False)
        else:
            self.early.append(msg)

    def _event(self, event: Any) -> None:
        self._note(Event(event=event, at=event.at))

    def _trace(self, direction: str, msg: SipMessage) -> None:
        self.traced += 1
        if self.traced > MAX_TRACE:
            return
        redact = self.ctx.redactor.redact
        detail = msg.get("refer-to") if msg.method == "REFER" else ""
        self._event(
            SipTrace(
                direction="sent" if direction == "sent" else "received",
                line=redact(printable(msg.summary()[:300])),
                cseq=printable(msg.get("cseq")[:40]),
                detail=redact(printable(detail[:300])),
                at=self.ctx.clock.now(),
            )
        )

    def _transferred(self, to: str) -> None:
        self._event(CallTransferred(to=self.ctx.redactor.redact(printable(to)), at=self.ctx.clock.now()))

    def _held(self, held: bool) -> None:
        self._event(CallHeld(held=held, at=self.ctx.clock.now()))

    def _ended(self) -> None:
        call = self.call
        if call is None or call.end_reason is None or call.end_reason == "caller":
            return
        self.report_end(call.end_reason, call.end_detail)
        if self.session is not None:
            clean = call.end_reason != "error"
            self.session.closed(1000 if clean else None, call.end_detail or call.end_reason)

    def report_end(self, by: str, detail: str) -> None:
        if self.ended_reported:
            return
        self.ended_reported = True
        self._event(
            CallEnded(
                by=by, detail=self.ctx.redactor.redact(printable(detail[:300])), at=self.ctx.clock.now()
            )
        )

    async def _time_limit(self, seconds: float) -> None:
        await self.ctx.clock.sleep(seconds)
        call = self.call
        if call is not None and call.state == "connected":
            await call.hangup("timeout", f"max_call_duration {seconds:g}s")

    # Turns.

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        early, self.early = self.early, []
        for msg in early:
            yield msg
        if self.session is None:
            if not self.ended_reported:
                call = self.call
                self.report_end(
                    call.end_reason or "error" if call else "error", call.end_detail if call else ""
                )
                early, self.early = self.early, []
                for msg in early:
                    yield msg
            call = self.call
            refused = None
            if call is not None and call.end_reason == "error":
                detail = self.ctx.redactor.redact(printable((call.end_detail or "no final answer")[:300]))
                refused = f"the call was not answered: {detail}"
            yield AgentTurn(text="", done=True, at=self.ctx.clock.now(), refusal=refused)
            return
        try:
            async for msg in self.session.turn(user):
                yield msg
        except TargetError as exc:
            raise self.redacted(exc) from None

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.session is not None:
            await self.session.stop()
        trunk, self.trunk = self.trunk, None
        if trunk is not None:
            await trunk.close()
        call, self.call = self.call, None
        if call is not None:
            with contextlib.suppress(Exception):
                if call.state in ("connected",):
                    await asyncio.wait_for(call.hangup(), 5)
            with contextlib.suppress(Exception):
                await call.close()
        ua, self.ua = self.ua, None
        if ua is not None:
            with contextlib.suppress(Exception):
                await ua.close()
