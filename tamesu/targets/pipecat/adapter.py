"""The ``pipecat`` target: a Pipecat bot reached as a Pipecat client, over its websocket transport
or its small WebRTC one (``transport: webrtc``).

On the websocket, frames travel as Pipecat's protobuf ``Frame`` (``pipecat_wire``) and RTVI
messages ride in its ``MessageFrame``; over WebRTC (``pipecat_webrtc``) RTVI messages ride the data
channel and audio a WebRTC track. Either is a ``PipecatLink``. On connect the adapter sends RTVI ``client-ready`` and waits up to ``idle`` for
``bot-ready`` (a bot without RTVI still works). If the bot starts talking by itself within the
next ``idle`` (a greeting), the adapter lets it speak first.

- ``mode: text`` sends each user turn as RTVI ``send-text`` (without RTVI: a ``TranscriptionFrame``)
  and reads the bot's words from ``bot-llm-text`` (else ``bot-output``, ``bot-transcription``,
  text and transcription frames). The turn ends at ``bot-llm-stopped`` once no function call is
  pending.
- ``mode: audio`` runs the call on ``tamesu.voice.VoiceSession`` (``pipecat_audio``): the caller's
  speech (and silence between turns, as a microphone sends) goes out as raw audio frames at
  ``sample_rate``; the bot's audio frames are played, heard by the VAD and recorded; the turn ends
  after ``idle`` of quiet. The bot's words are its ``bot-tts-text`` unless
  ``transcript_source: stt`` (or it sent none), when its audio is transcribed.

In text mode a turn also ends after ``idle`` without a message once the bot said something. The
session ends (``done``) when the bot closes the socket (or leaves the WebRTC call). Function calls reported by
``llm-function-call-in-progress`` (the bot must report them at level ARGUMENTS or FULL) whose
name is in ``tool_results`` or ``fuzz_tools`` are answered with ``llm-function-call-result``
(RTVI's client-side function calling); the others are the bot's own, recorded with the result
``llm-function-call-stopped`` reports.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from tamesu.durations import format_duration, parse_duration
from tamesu.errors import TargetError, TemplateError
from tamesu.fuzz import ToolFuzzer, render_tool_result, result_text
from tamesu.kernel.messages import (
    AgentPartial,
    AgentTurn,
    Message,
    RawResponse,
    ToolCall,
    ToolResult,
    UserTurn,
)
from tamesu.targets.base import TargetAdapter, target, turn_text
from tamesu.targets.pipecat.pipecat_wire import (
    RTVI_VERSION,
    SPEAKING,
    WireFrame,
    raw,
    rtvi,
    rtvi_data,
    rtvi_type,
    speaks,
)
from tamesu.targets.pipecat.settings import PipecatTarget
from tamesu.wire.connect import ConnectPolicy, open_session
from tamesu.wire.wslink import Closed

if TYPE_CHECKING:
    from tamesu.targets.base import TargetContext
    from tamesu.targets.pipecat.pipecat_audio import PipecatCall
    from tamesu.targets.pipecat.pipecat_link import PipecatLink

__all__ = ["PipecatAdapter"]

SETTLE_S = 0.25
"""After a text turn's end markers, how long late messages (or the bot closing the socket) are awaited."""


@dataclass
class _Turn:
    """What one text-mode turn has heard so far."""

    llm_text: list[str] = field(default_factory=list)
    outputs: dict[Any, str] = field(default_factory=dict)
    transcriptions: list[str] = field(default_factory=list)
    frames_text: list[str] = field(default_factory=list)
    llm_running: bool = False
    calls_pending: int = 0
    heard: bool = False
    first_byte_at: float | None = None
    end_at: float | None = None
    done: bool = False

    @property
    def said(self) -> str:
        outputs = " ".join(t.strip() for t in self.outputs.values() if t.strip())
        return (
            "".join(self.llm_text).strip()
            or outputs
            or " ".join(self.transcriptions)
            or " ".join(self.frames_text)
        )


@target("pipecat", config=PipecatTarget)
class PipecatAdapter(TargetAdapter):
    """One session with a Pipecat bot; see the module docstring."""

    config: PipecatTarget

    def __init__(self, config: PipecatTarget, ctx: TargetContext) -> None:
        super().__init__(config, ctx)
        self.policy = ConnectPolicy.from_config(config.connect)
        self.mode = ctx.mode or config.mode
        """The test's mode overrides the target's."""
        self.idle = parse_duration(config.idle or "2s")
        self.fuzzer = ToolFuzzer.for_context(ctx)
        self.tool_results: dict[str, Any] = dict(config.tool_results or {})
        self.link: PipecatLink | None = None
        self.rtvi = False
        self.setup: list[Any] = []
        self.call: PipecatCall | None = None

    @property
    def audio(self) -> bool:
        return self.mode == "audio"

    @property
    def hears_unprompted(self) -> bool:
        return self.call is not None

    @property
    def answered(self) -> set[str]:
        """Function names tamesu answers (the rest are the bot's own)."""
        return set(self.tool_results) | set(self.fuzzer.specs)

    async def start(self) -> None:
        from tamesu.templates import render_text

        ctx = self.ctx
        ctx.scope.set("session", ctx.session)
        try:
            session = self.config.session
            if session is not None and session.open is not None:
                await open_session(ctx, session.open, self.policy)
            if not self.config.url:
                raise TargetError("a pipecat target needs url", retryable=False, kind="config")
            headers = {k: render_text(v, ctx.scope) for k, v in (self.config.headers or {}).items()}
            url = render_text(self.config.url, ctx.scope)
            if self.config.transport == "webrtc":
                from tamesu.targets.pipecat.pipecat_webrtc import PipecatPeer

                self.link = PipecatPeer(ctx, url, audio=self.audio)
            else:
                from tamesu.targets.pipecat.pipecat_link import PipecatSocket

                self.link = PipecatSocket(ctx, url)
            await self.link.open(self.policy, headers, ready=self._handshake)
            if self.audio:
                from tamesu.targets.pipecat.pipecat_audio import PipecatCall

                self.call = PipecatCall(self)
                self.agent_speaks_first = await self.call.start()  # type: ignore[misc]
            else:
                self.agent_speaks_first = await self._greets()  # type: ignore[misc]
        except TemplateError as exc:
            await self.stop()
            raise TargetError(str(exc), retryable=False, kind="config") from None
        except TargetError as exc:
            await self.stop()
            raise self.redacted(exc) from None
        except BaseException:
            await self.stop()
            raise

    async def _handshake(self) -> None:
        """RTVI client-ready; up to ``idle`` for bot-ready (a bot without RTVI is served without it).

        Run as the link's ``ready`` step: a bot busy with another client closes the socket (1013)
        before bot-ready, and the connect policy tries again.
        """
        assert self.link is not None
        self.rtvi, self.setup = False, []
        about = {"library": "tamesu", "platform": "python"}
        await self.link.send_message(rtvi("client-ready", {"version": RTVI_VERSION, "about": about}))
        clock = self.ctx.clock
        deadline = clock.now() + self.idle
        while not self.rtvi:
            try:
                item = await self.link.next(deadline - clock.now())
            except asyncio.TimeoutError:
                return
            if isinstance(item, Closed):
                raise TargetError(
                    f"the bot closed the {self.link.medium} ({item.describe()}) before bot-ready"
                )
            self.setup.append(item)
            self.rtvi = rtvi_type(item) == "bot-ready"
            if speaks(item):
                return

    async def _greets(self) -> bool:
        """Whether the bot starts talking by itself within ``idle`` (a greeting)."""
        assert self.link is not None
        if any(speaks(item) for item in self.setup):
            return True
        clock = self.ctx.clock
        deadline = clock.now() + self.idle
        while True:
            try:
                item = await self.link.next(deadline - clock.now())
            except asyncio.TimeoutError:
                return False
            if isinstance(item, Closed):
                return False
            self.setup.append(item)
            if speaks(item):
                return True

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        if self.link is None:
            raise TargetError("the pipecat target is not connected", retryable=False, kind="adapter")
        turn = self.call.turn(user) if self.call is not None else self._text_turn(user)
        async for msg in self.redacting(turn):
            yield msg

    async def _text_turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        assert self.link is not None
        clock = self.ctx.clock
        state = _Turn()
        pending, self.setup = [*self.setup, *self.link.drain()], []
        sent_at = clock.now()
        if user is not None:
            for item in pending:
                yield RawResponse(body=raw(item), at=clock.now())
            pending = []
            if self.link.closed is not None and self.link.queue.qsize() <= 1:
                raise TargetError(
                    f"the bot closed the {self.link.medium} ({self.link.closed.describe()}) before this turn"
                )
            sent_at = clock.now()
            await self._send_text(turn_text(user, "pipecat", "text"))
        for item in pending:
            for msg in await self._on(item, state, clock.now()):
                yield msg
        async for msg in self._read(state):
            yield msg
        end_at = state.end_at or clock.now()
        yield AgentTurn(
            text=state.said,
            done=state.done,
            sent_at=sent_at,
            first_byte_at=state.first_byte_at,
            end_at=end_at,
            at=clock.now(),
        )

    async def _send_text(self, text: str) -> None:
        """RTVI send-text (as a Pipecat client's sendText); without RTVI, a transcription frame."""
        assert self.link is not None
        if self.rtvi:
            options = {"run_immediately": True, "audio_response": False}
            await self.link.send_message(rtvi("send-text", {"content": text, "options": options}))
        else:
            await self.link.send_transcription(text)

    async def _read(self, state: _Turn) -> AsyncIterator[Message]:
        """Until the end markers (then a short settle), ``idle`` of silence, or the bot closing."""
        assert self.link is not None
        clock, timeout = self.ctx.clock, self.ctx.turn_timeout
        deadline = clock.now() + timeout
        while True:
            if self._finished(state):
                state.end_at = state.end_at or clock.now()
                wait = min(SETTLE_S, self.idle)
            else:
                state.end_at = None
                wait = min(self.idle, deadline - clock.now()) if state.heard else deadline - clock.now()
            try:
                item = await self.link.next(wait)
            except asyncio.TimeoutError:
                if state.end_at is not None or (state.heard and clock.now() < deadline):
                    return
                raise TargetError(
                    f"no end of the bot's turn within {format_duration(timeout)} on {self.link.url}",
                    retryable=True,
                ) from None
            if isinstance(item, Closed):
                if state.heard and item.code in (1000, 1001):
                    state.done = True
                    return
                raise TargetError(f"the bot closed the {self.link.medium} mid-turn ({item.describe()})")
            for msg in await self._on(item, state, clock.now()):
                yield msg

    def _finished(self, state: _Turn) -> bool:
        return self.rtvi and not state.llm_running and state.calls_pending == 0 and bool(state.said)

    async def _on(self, item: Any, state: _Turn, now: float) -> list[Message]:
        """One frame or RTVI message of a text turn, as messages for the transcript."""
        if isinstance(item, WireFrame):
            if item.kind in ("text", "transcription") and item.get("text"):
                self._heard(state, now)
                state.frames_text.append(str(item.get("text")))
            return [] if item.kind == "audio" else [RawResponse(body=raw(item), at=now)]
        out: list[Message] = [RawResponse(body=item, at=now)]
        kind, data = rtvi_type(item), rtvi_data(item)
        text = str(data.get("text") or "")
        if kind in SPEAKING or kind in ("bot-transcription", "bot-tts-text", "llm-function-call-started"):
            self._heard(state, now)
        if kind == "bot-llm-started":
            state.llm_running = True
        elif kind == "bot-llm-stopped":
            state.llm_running = False
        elif kind == "bot-llm-text":
            state.llm_text.append(text)
            out.append(AgentPartial(text=text, at=now))
        elif kind == "bot-output" and text:
            state.outputs[data.get("segment_id", len(state.outputs))] = text
        elif kind == "bot-transcription" and text:
            state.transcriptions.append(text)
        elif kind == "llm-function-call-started":
            state.calls_pending += 1
        elif kind == "llm-function-call-stopped":
            state.calls_pending = max(0, state.calls_pending - 1)
        out += await self.rtvi_event(kind, data)
        return out

    async def rtvi_event(self, kind: str | None, data: dict[str, Any]) -> list[Message]:
        """What both modes do with an RTVI message: function calls, their results, fatal errors."""
        now = self.ctx.clock.now()
        if kind == "bot-ready":
            self.rtvi = True
        if kind in ("llm-function-call-in-progress", "llm-function-call"):
            return await self._call(data, legacy=kind == "llm-function-call")
        if (
            kind == "llm-function-call-stopped"
            and "result" in data
            and data.get("function_name") not in self.answered
        ):
            name = str(data.get("function_name") or "")
            return [ToolResult(name=name, result=data.get("result"), id=data.get("tool_call_id"), at=now)]
        if kind == "error" and data.get("fatal"):
            raise TargetError(f"the bot reported a fatal error: {data.get('error')}")
        if kind == "error-response" and "send-text" in str(data.get("error", "")):
            raise TargetError(f"the bot refused send-text: {data.get('error')}", retryable=False)
        return []

    @staticmethod
    def _heard(state: _Turn, now: float) -> None:
        state.heard = True
        if state.first_byte_at is None:
            state.first_byte_at = now

    async def _call(self, data: dict[str, Any], *, legacy: bool) -> list[Message]:
        """Record a function call, and answer it when it is one tamesu answers."""
        assert self.link is not None
        clock = self.ctx.clock
        name = str(data.get("function_name") or "")
        call_id = str(data.get("tool_call_id") or "")
        args = data.get("args" if legacy else "arguments")
        args = dict(args) if isinstance(args, dict) else {}
        out: list[Message] = [ToolCall(name=name, args=args, id=call_id or None, at=clock.now())]
        if not name or name not in self.answered:
            return out
        result = await self.fuzzer.answer(name, partial(self._configured, name, args))
        mode = self.fuzzer.mode(name)
        if mode is not None:
            out.append(RawResponse(body={"event": "fuzz", "tool": name, "mode": mode}, at=clock.now()))
        out.append(ToolResult(name=name, result=result, id=call_id or None, at=clock.now()))
        answer = {
            "function_name": name,
            "tool_call_id": call_id,
            "arguments": args,
            "result": result if isinstance(result, (dict, str)) else result_text(result),
        }
        await self.link.send_message(rtvi("llm-function-call-result", answer))
        return out

    def _configured(self, name: str, args: dict[str, Any]) -> Any:
        if name not in self.tool_results:
            return {"error": f"no result configured for {name}"}
        try:
            return render_tool_result(self.tool_results[name], args, self.ctx.scope)
        except TemplateError as exc:
            raise TargetError(f"tool_results.{name}: {exc}", retryable=False, kind="config") from None

    async def stop(self) -> None:
        if self.call is not None:
            call, self.call = self.call, None
            await call.stop()
        if self.link is not None:
            link, self.link = self.link, None
            await link.close()
