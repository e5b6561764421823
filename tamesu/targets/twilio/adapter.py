"""The ``twilio`` target: tamesu plays Twilio, calling the agent's Media Streams websocket.

An agent built for Twilio Media Streams (bidirectional ``<Connect><Stream>``) sees exactly what
Twilio sends: ``connected``; ``start`` with the stream and call ids, the media format (8 kHz mu-law)
and ``customParameters`` (``parameters``, plus ``From`` and ``To`` from ``from`` / ``to``); then a
``media`` message every 20 ms with the caller's audio, ``dtmf`` for keypad presses, ``mark`` when
audio the agent marked has been played, and ``stop`` when the caller hangs up. The agent answers
with ``media`` (its audio, played at real time like Twilio's buffer), ``mark`` (echoed once the
audio before it has played) and ``clear`` (the queued audio is dropped and pending marks echoed at
once, as Twilio does). The agent ends the call by closing the socket.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from tamesu.errors import TargetError
from tamesu.kernel.messages import Message, RawResponse, UserTurn
from tamesu.limits import decode_json
from tamesu.targets.base import TargetAdapter, target
from tamesu.targets.twilio.settings import TwilioTarget
from tamesu.templates import render_text
from tamesu.wire.connect import ConnectPolicy, open_session

if TYPE_CHECKING:
    from tamesu.targets.base import TargetContext
    from tamesu.voice.session import VoiceSession
    from tamesu.wire.audio_socket import AudioSocket

__all__ = ["RATE", "TwilioAdapter", "twilio_sid"]

RATE = 8000


def twilio_sid(prefix: str) -> str:
    """A Twilio-shaped id: two letters and 32 hex digits (MZ stream, CA call, AC account)."""
    return prefix + secrets.token_hex(16)


@target("twilio", config=TwilioTarget)
class TwilioAdapter(TargetAdapter):
    """One call to a Twilio Media Streams agent; see the module docstring."""

    config: TwilioTarget

    agent_speaks_first = True

    @property
    def hears_unprompted(self) -> bool:
        return True

    def __init__(self, config: TwilioTarget, ctx: TargetContext) -> None:
        super().__init__(config, ctx)
        self.policy = ConnectPolicy.from_config(config.connect)
        self.session: VoiceSession | None = None
        self.socket: AudioSocket | None = None
        self.stream_sid = twilio_sid("MZ")
        self.call_sid = twilio_sid("CA")
        self.account_sid = twilio_sid("AC")
        self._seq = 0
        self._chunk = 0

    def custom_parameters(self) -> dict[str, str]:
        """``parameters`` rendered, with ``From`` / ``To`` when the target sets them."""
        scope = self.ctx.scope
        params = {str(k): render_text(str(v), scope) for k, v in (self.config.parameters or {}).items()}
        if self.config.from_:
            params["From"] = render_text(self.config.from_, scope)
        if self.config.to:
            params["To"] = render_text(self.config.to, scope)
        return params

    async def start(self) -> None:
        from tamesu.targets.voice.adapter import audio_url
        from tamesu.voice.session import VoiceSession
        from tamesu.voice.settings import VoiceSettings
        from tamesu.wire.audio_socket import AudioSocket

        ctx, scope = self.ctx, self.ctx.scope
        scope.set("session", ctx.session)
        try:
            session = self.config.session
            if session is not None and session.open is not None:
                await open_session(ctx, session.open, self.policy)
            if not self.config.url:
                raise TargetError("a twilio target needs url", retryable=False, kind="config")
            settings = VoiceSettings.build(self.config, ctx, encoding="mulaw", rate=RATE)
            self.session = VoiceSession(settings, ctx, self)
            self.socket = AudioSocket(
                ctx,
                self.policy,
                audio_url(render_text(self.config.url, scope)),
                headers={k: render_text(v, scope) for k, v in (self.config.headers or {}).items()},
                on_text=self._on_text,
                on_binary=lambda data: None,
                on_close=self.session.closed,
            )
            await self.socket.connect()
            await self.socket.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}))
            await self.socket.send(json.dumps(self._start_event()))
            await self.session.start()
        except TargetError as exc:
            await self.stop()
            raise TargetError(ctx.redactor.redact(str(exc)), retryable=exc.retryable, kind=exc.kind) from None

    def _next_seq(self) -> str:
        self._seq += 1
        return str(self._seq)

    def _start_event(self) -> dict[str, Any]:
        return {
            "event": "start",
            "sequenceNumber": self._next_seq(),
            "start": {
                "accountSid": self.account_sid,
                "streamSid": self.stream_sid,
                "callSid": self.call_sid,
                "tracks": ["inbound"],
                "customParameters": self.custom_parameters(),
                "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": RATE, "channels": 1},
            },
            "streamSid": self.stream_sid,
        }

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        if self.session is None:
            raise TargetError("the twilio target was not started", retryable=False, kind="adapter")
        try:
            async for msg in self.session.turn(user):
                yield msg
        except TargetError as exc:
            raise TargetError(
                self.ctx.redactor.redact(str(exc)), retryable=exc.retryable, kind=exc.kind
            ) from None

    async def stop(self) -> None:
        if self.session is not None:
            await self.session.stop()
        if self.socket is not None:
            socket, self.socket = self.socket, None
            stop = {
                "event": "stop",
                "sequenceNumber": self._next_seq(),
                "streamSid": self.stream_sid,
                "stop": {"accountSid": self.account_sid, "callSid": self.call_sid},
            }
            await socket.close(json.dumps(stop))

    # The wire, as the session drives it.

    def send_audio(self, payload: bytes) -> None:
        if self.socket is None:
            return
        self._seq += 1
        self._chunk += 1
        audio = base64.b64encode(payload).decode()
        self.socket.queue(
            f'{{"event":"media","sequenceNumber":"{self._seq}","media":{{"track":"inbound",'
            f'"chunk":"{self._chunk}","timestamp":"{(self._chunk - 1) * 20}","payload":"{audio}"}},'
            f'"streamSid":"{self.stream_sid}"}}'
        )

    def marks_played(self, names: list[str]) -> None:
        if self.socket is None:
            return
        for name in names:
            self.socket.queue(
                json.dumps(
                    {
                        "event": "mark",
                        "sequenceNumber": self._next_seq(),
                        "streamSid": self.stream_sid,
                        "mark": {"name": name},
                    }
                )
            )

    async def send_dtmf(self, digits: str) -> bool:
        if self.socket is None:
            return False
        for digit in digits:
            await self.socket.send(
                json.dumps(
                    {
                        "event": "dtmf",
                        "streamSid": self.stream_sid,
                        "sequenceNumber": self._next_seq(),
                        "dtmf": {"track": "inbound_track", "digit": digit},
                    }
                )
            )
        return True

    def _on_text(self, text: str) -> None:
        session = self.session
        if session is None:
            return
        try:
            msg = decode_json(text, self.ctx.limits.json_depth)
        except ValueError:
            session.heard_message(RawResponse(body=text, at=self.ctx.clock.now()), activity=False)
            return
        event = msg.get("event") if isinstance(msg, dict) else None
        if event == "media":
            from tamesu.audio.codec import ulaw_decode

            payload = (msg.get("media") or {}).get("payload")
            if isinstance(payload, str):
                try:
                    session.heard_audio(ulaw_decode(base64.b64decode(payload)))
                except (binascii.Error, ValueError):
                    pass
            return
        if event == "mark":
            name = (msg.get("mark") or {}).get("name")
            session.heard_mark(str(name))
        elif event == "clear":
            session.heard_clear()
        session.heard_message(RawResponse(body=msg, at=self.ctx.clock.now()), activity=False)
