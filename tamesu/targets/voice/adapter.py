"""The ``voice`` target: an agent that talks over a generic audio websocket.

The caller's audio goes out every 20 ms as ``audio.encoding`` at ``audio.sample_rate``, one chunk
per binary frame, or base64 inside the ``audio.send`` JSON template (``frames: json``). The agent's
audio comes back the same way (``audio.receive`` finds it in JSON messages). ``messages`` names the
protocol's JSON control messages: ``open`` is sent after connecting, ``dtmf`` per keypad digit,
``close`` before hanging up; ``transcript``, ``done``, ``interrupted`` and ``tool_calls`` are
JSONPaths read from every message the agent sends. The call itself (caller voice, line, VAD, turn
ends, barge-in, STT, metrics, recording) is ``tamesu.voice.VoiceSession``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from tamesu.errors import TargetError
from tamesu.jsonpath import JSONPathError, find_in_message, truthy
from tamesu.kernel.messages import Message, RawResponse, UserTurn
from tamesu.targets.base import TargetAdapter, target
from tamesu.targets.rest.rest_read import decode_text, parse_tool_calls
from tamesu.targets.voice.settings import VoiceTarget
from tamesu.templates import render, render_text
from tamesu.wire.connect import ConnectPolicy, open_session

if TYPE_CHECKING:
    from tamesu.targets.base import TargetContext
    from tamesu.voice.session import VoiceSession
    from tamesu.wire.audio_socket import AudioSocket

__all__ = ["VoiceAdapter", "audio_url", "frame_template"]

_SENTINEL = "@@tamesu:audio:5b1f@@"


def audio_url(url: str) -> str:
    """http(s) becomes ws(s); ws(s) stays."""
    from tamesu.targets.rest.rest_ws import ws_url

    return ws_url(url)


def frame_template(template: Any, scope: Any) -> tuple[str, str]:
    """``audio.send`` rendered once around a placeholder: per frame, prefix + base64 + suffix is the message."""
    rendered = render(template, scope.child({"audio": _SENTINEL}))
    text = json.dumps(rendered, ensure_ascii=False)
    if text.count(_SENTINEL) != 1:
        raise TargetError("audio.send must contain {{audio}} exactly once", retryable=False, kind="config")
    prefix, _, suffix = text.partition(_SENTINEL)
    return prefix, suffix


@target("voice", config=VoiceTarget)
class VoiceAdapter(TargetAdapter):
    """One call to a voice websocket agent; see the module docstring."""

    config: VoiceTarget

    agent_speaks_first = True

    @property
    def hears_unprompted(self) -> bool:
        return True

    def __init__(self, config: VoiceTarget, ctx: TargetContext) -> None:
        super().__init__(config, ctx)
        from tamesu.audio.codec import normalise_encoding

        self.policy = ConnectPolicy.from_config(config.connect)
        audio = config.audio
        self.encoding = normalise_encoding(getattr(audio, "encoding", None) or "pcm16")
        default_rate = 16000 if self.encoding == "pcm16" else 8000
        self.rate = int(getattr(audio, "sample_rate", None) or default_rate)
        self.json_frames = getattr(audio, "frames", "binary") == "json"
        self.receive = getattr(audio, "receive", None)
        self.messages = config.messages
        self.session: VoiceSession | None = None
        self.socket: AudioSocket | None = None
        self._frame: tuple[bytes, bytes] | None = None

    async def start(self) -> None:
        from tamesu.voice.session import VoiceSession
        from tamesu.voice.settings import VoiceSettings
        from tamesu.wire.audio_socket import AudioSocket

        ctx, scope = self.ctx, self.ctx.scope
        scope.set("session", ctx.session)
        try:
            self._compile_paths()
            session = self.config.session
            if session is not None and session.open is not None:
                await open_session(ctx, session.open, self.policy)
            if not self.config.url:
                raise TargetError("a voice target needs url", retryable=False, kind="config")
            if self.json_frames:
                send = getattr(self.config.audio, "send", None)
                prefix, suffix = frame_template(send if send is not None else {"audio": "{{audio}}"}, scope)
                self._frame = (prefix.encode(), suffix.encode())
            settings = VoiceSettings.build(self.config, ctx, encoding=self.encoding, rate=self.rate)
            self.session = VoiceSession(settings, ctx, self)
            self.socket = AudioSocket(
                ctx,
                self.policy,
                audio_url(render_text(self.config.url, scope)),
                headers={k: render_text(v, scope) for k, v in (self.config.headers or {}).items()},
                on_text=self._on_text,
                on_binary=self._on_binary,
                on_close=self.session.closed,
            )
            await self.socket.connect()
            opening = getattr(self.messages, "open", None)
            if opening is not None:
                await self.socket.send(_encode(render(opening, scope)))
            await self.session.start()
        except TargetError as exc:
            await self.stop()
            raise self._redacted(exc) from None
        except JSONPathError as exc:
            await self.stop()
            raise TargetError(str(exc), retryable=False, kind="config") from None

    def _compile_paths(self) -> None:
        from tamesu.jsonpath import validate

        m = self.messages
        paths = [self.receive] + [
            getattr(m, k, None) for k in ("transcript", "done", "interrupted", "tool_calls")
        ]
        for path in paths:
            if path:
                validate(path)

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        if self.session is None:
            raise TargetError("the voice target was not started", retryable=False, kind="adapter")
        try:
            async for msg in self.session.turn(user):
                yield msg
        except TargetError as exc:
            raise self._redacted(exc) from None

    async def stop(self) -> None:
        if self.session is not None:
            await self.session.stop()
        if self.socket is not None:
            socket, self.socket = self.socket, None
            closing = getattr(self.messages, "close", None)
            last = [_encode(render(closing, self.ctx.scope))] if closing is not None else []
            await socket.close(*last)

    # The wire, as the session drives it.

    def send_audio(self, payload: bytes) -> None:
        if self.socket is None:
            return
        if self._frame is None:
            self.socket.queue(payload)
        else:
            prefix, suffix = self._frame
            self.socket.queue((prefix + base64.b64encode(payload) + suffix).decode())

    def marks_played(self, names: list[str]) -> None:
        """The generic protocol has no marks."""

    async def send_dtmf(self, digits: str) -> bool:
        template = getattr(self.messages, "dtmf", None)
        if template is None or self.socket is None:
            return False
        for digit in digits:
            await self.socket.send(_encode(render(template, self.ctx.scope.child({"digit": digit}))))
        return True

    def _on_binary(self, data: bytes) -> None:
        from tamesu.audio.codec import decode

        if self.session is not None and data:
            self.session.heard_audio(
                decode(data[: len(data) - len(data) % 2] if self.encoding == "pcm16" else data, self.encoding)
            )

    def _on_text(self, text: str) -> None:
        session = self.session
        if session is None:
            return
        msg, is_json = decode_text(text, self.ctx.limits.json_depth)
        if not is_json:
            session.heard_message(RawResponse(body=text, at=self.ctx.clock.now()), activity=False)
            return
        carried_audio = self._audio_in(msg)
        m = self.messages
        if m is not None:
            if m.transcript:
                for words in find_in_message(m.transcript, msg):
                    if isinstance(words, str) and words.strip():
                        session.heard_transcript(words)
            if m.caller_transcript:
                for words in find_in_message(m.caller_transcript, msg):
                    if isinstance(words, str) and words.strip():
                        session.heard_caller_transcript(words)
            if m.tool_calls:
                for call in parse_tool_calls(find_in_message(m.tool_calls, msg), at=self.ctx.clock.now()):
                    session.heard_message(call)
            if m.interrupted and truthy(find_in_message(m.interrupted, msg)):
                session.heard_clear(reason="interrupted")
            if m.done and truthy(find_in_message(m.done, msg)):
                session.heard_done()
        if not carried_audio:
            session.heard_message(RawResponse(body=msg, at=self.ctx.clock.now()), activity=False)

    def _audio_in(self, msg: Any) -> bool:
        if not self.json_frames or not self.receive or self.session is None:
            return False
        from tamesu.audio.codec import decode

        found = False
        for chunk in find_in_message(self.receive, msg):
            if not isinstance(chunk, str):
                continue
            try:
                data = base64.b64decode(chunk, validate=False)
            except (binascii.Error, ValueError):
                continue
            if self.encoding == "pcm16":
                data = data[: len(data) - len(data) % 2]
            self.session.heard_audio(decode(data, self.encoding))
            found = True
        return found

    def _redacted(self, exc: TargetError) -> TargetError:
        return exc.reworded(self.ctx.redactor.redact(str(exc)))


def _encode(payload: Any) -> str:
    return payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
