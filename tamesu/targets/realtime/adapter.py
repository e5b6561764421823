"""The ``realtime`` target: a speech-to-speech model behind the OpenAI Realtime API.

One websocket per run (``url``, default the OpenAI endpoint, with ``?model=``). After
``session.created`` the adapter sends ``session.update`` (the mode's settings with
``session_update`` merged in) and waits for ``session.updated``.

- ``mode: text``: a turn is a user message item and ``response.create``; the agent's turn ends at
  a ``response.done`` without function calls, its words are the response's text.
- ``mode: audio``: the call runs on ``tamesu.voice.VoiceSession`` (``realtime_audio``): the caller's
  speech streams into the input buffer in 20 ms appends, server VAD ends the caller's turn and
  starts the response (with turn detection off, the adapter commits and asks for it), and the
  agent's audio is played, heard and recorded like any phone call. Its words come from the API's
  ``response.output_audio_transcript.done`` unless ``transcript_source: stt`` (or none came).

In both modes function calls are answered from ``tool_results`` (or ``fuzz_tools``) with a
``function_call_output`` item and another ``response.create``; a call of ``done_tool`` ends the
session. Every event but the streaming deltas is kept as a raw response, for ``json_path``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from tamesu.durations import format_duration
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
from tamesu.limits import DEFAULT_LIMITS, decode_json
from tamesu.targets.base import TargetAdapter, target, turn_text
from tamesu.targets.realtime.realtime_events import (
    DEFAULT_URL,
    Calls,
    Dialect,
    api_error,
    as_dict,
    canonical,
    failure,
    kept,
)
from tamesu.targets.realtime.settings import RealtimeTarget
from tamesu.untrusted import loads_json
from tamesu.wire.connect import ConnectPolicy, open_session
from tamesu.wire.wslink import Closed, WsLink, http_to_ws

if TYPE_CHECKING:
    from tamesu.targets.base import TargetContext
    from tamesu.targets.realtime.realtime_audio import RealtimeCall

__all__ = ["DONE_RESULT", "RealtimeAdapter", "model_url", "test_mode"]

DONE_RESULT: dict[str, Any] = {"ok": True}
"""The answer to the done tool when tool_results gives none."""


def model_url(url: str, model: str | None) -> str:
    """``url`` as a websocket URL with ``model`` set as its ``?model=`` query parameter."""
    url = http_to_ws(url)
    if not model:
        return url
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "model"]
    query.append(("model", model))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), parts.fragment))


def _decode(frame: str | bytes, depth: int = DEFAULT_LIMITS.json_depth) -> dict[str, Any] | None:
    try:
        event = decode_json(frame, depth)
    except (ValueError, UnicodeDecodeError):
        return {"type": "tamesu.unreadable", "frame": frame[:200] if isinstance(frame, str) else None}
    return event if isinstance(event, dict) else None


@dataclass
class _Turn:
    """What one text-mode agent turn has produced so far (it may span several responses)."""

    texts: list[str] = field(default_factory=list)
    deltas: list[str] = field(default_factory=list)
    calls: Calls = field(default_factory=Calls)
    responses: int = 0
    first_byte_at: float | None = None
    done: bool = False


@target("realtime", config=RealtimeTarget)
class RealtimeAdapter(TargetAdapter):
    """One Realtime API session; see the module docstring."""

    config: RealtimeTarget

    def __init__(self, config: RealtimeTarget, ctx: TargetContext) -> None:
        super().__init__(config, ctx)
        self.policy = ConnectPolicy.from_config(config.connect)
        self.mode = test_mode(ctx) or config.mode
        self.dialect = Dialect(config.protocol or "ga", mode=self.mode, audio_format=config.audio_format)  # type: ignore[arg-type]
        self.fuzzer = ToolFuzzer.for_context(ctx)
        self.tool_results: dict[str, Any] = dict(config.tool_results or {})
        self.done_tool = config.done_tool or "end_session"
        self.link: WsLink | None = None
        self.session: dict[str, Any] = {}
        self.server_vad = False
        self.setup_events: list[dict[str, Any]] = []
        self.call: RealtimeCall | None = None
        self._ended = False

    @property
    def audio(self) -> bool:
        return self.mode == "audio"

    async def start(self) -> None:
        from tamesu.templates import render_text

        ctx = self.ctx
        ctx.scope.set("session", ctx.session)
        try:
            session = self.config.session
            if session is not None and session.open is not None:
                await open_session(ctx, session.open, self.policy)
            headers = self.dialect.headers()
            for key, value in (self.config.headers or {}).items():
                headers = {k: v for k, v in headers.items() if k.lower() != key.lower()}
                headers[key] = render_text(value, ctx.scope)
            url = model_url(render_text(self.config.url or DEFAULT_URL, ctx.scope), self.config.model)
            self.link = WsLink(ctx, url, decode=partial(_decode, depth=ctx.limits.json_depth))
            await self.link.open(self.policy, headers, ready=self._setup)
            if self.audio:
                from tamesu.targets.realtime.realtime_audio import RealtimeCall

                self.call = RealtimeCall(self)
                await self.call.start()
        except TemplateError as exc:
            await self.stop()
            raise TargetError(str(exc), retryable=False, kind="config") from None
        except TargetError as exc:
            await self.stop()
            raise self.redacted(exc) from None
        except BaseException:
            await self.stop()
            raise

    async def _setup(self) -> None:
        """session.created, then our session.update, then session.updated."""
        from tamesu.templates import render

        self.setup_events = []
        await self._await_event("session.created")
        update = self.dialect.session_update(render(self.config.session_update or {}, self.ctx.scope))
        self.session = update["session"]
        self.server_vad = self.audio and self.dialect.server_vad(self.session)
        await self.send(update)
        await self._await_event("session.updated")

    async def _await_event(self, kind: str) -> dict[str, Any]:
        assert self.link is not None
        clock, timeout = self.ctx.clock, self.ctx.turn_timeout
        deadline = clock.now() + timeout
        while True:
            try:
                event = await self.link.next(deadline - clock.now())
            except asyncio.TimeoutError:
                raise TargetError(
                    f"no {kind} within {format_duration(timeout)} from {self.link.url}", retryable=True
                ) from None
            if isinstance(event, Closed):
                raise TargetError(f"the realtime API closed the websocket ({event.describe()}) before {kind}")
            self.setup_events.append(event)
            if event.get("type") == "error":
                raise TargetError(api_error(event, before=kind), retryable=False, kind="agent")
            if event.get("type") == kind:
                return event

    async def send(self, event: dict[str, Any]) -> None:
        assert self.link is not None
        await self.link.send(json.dumps(event, ensure_ascii=False))

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        if self.link is None:
            raise TargetError("the realtime target is not connected", retryable=False, kind="adapter")
        clock = self.ctx.clock
        setup, self.setup_events = self.setup_events, []
        for event in setup:
            if kept(event):
                yield RawResponse(body=event, at=clock.now())
        turn = self.call.turn(user) if self.call is not None else self._text_turn(user)
        async for msg in self.redacting(turn):
            yield msg

    async def _text_turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        assert self.link is not None
        clock = self.ctx.clock
        for event in self.link.drain():
            if kept(event):
                yield RawResponse(body=event, at=clock.now())
        if self._ended:
            raise TargetError("the session already ended (done_tool)", retryable=False, kind="adapter")
        if self.link.closed is not None and self.link.queue.qsize() <= 1:
            raise TargetError(
                f"the realtime API closed the websocket ({self.link.closed.describe()}) before this turn"
            )
        sent_at = clock.now()
        if user is not None:
            await self.send(self.dialect.user_text(turn_text(user, "realtime", "text")))
        await self.send(self.dialect.response_create())
        state = _Turn()
        async for msg in self._read(state, sent_at):
            yield msg
        end_at = clock.now()
        self._ended = state.done
        text = " ".join(t for t in state.texts if t) or "".join(state.deltas)
        yield AgentTurn(
            text=text,
            done=state.done,
            sent_at=sent_at,
            first_byte_at=state.first_byte_at,
            end_at=end_at,
            at=end_at,
        )

    async def _read(self, state: _Turn, sent_at: float) -> AsyncIterator[Message]:
        assert self.link is not None
        clock, timeout = self.ctx.clock, self.ctx.turn_timeout
        deadline = sent_at + timeout
        while True:
            try:
                event = await self.link.next(deadline - clock.now())
            except asyncio.TimeoutError:
                raise TargetError(
                    f"no response.done within {format_duration(timeout)} on {self.link.url}", retryable=True
                ) from None
            now = clock.now()
            if isinstance(event, Closed):
                if state.responses and event.code in (1000, 1001):
                    state.done = True
                    return
                raise TargetError(f"the realtime API closed the websocket mid-turn ({event.describe()})")
            kind = canonical(str(event.get("type", "")))
            if kept(event):
                yield RawResponse(body=event, at=now)
            if kind == "error":
                error = as_dict(event.get("error"))
                raise TargetError(
                    api_error(event), retryable=error.get("type") == "server_error", kind="agent"
                )
            if kind == "response.created":
                state.responses += 1
                state.first_byte_at = state.first_byte_at or now
            elif kind == "response.output_text.delta":
                state.deltas.append(str(event.get("delta", "")))
                yield AgentPartial(text=str(event.get("delta", "")), at=now)
            elif kind == "response.output_text.done":
                state.texts.append(str(event.get("text", "")))
            state.calls.see(kind, event)
            if kind != "response.done":
                continue
            failed = failure(event)
            if failed is not None:
                raise TargetError(failed[0], retryable=failed[1])
            calls = state.calls.take()
            if not calls:
                return
            answers, state.done = await self.answer(calls)
            for msg in answers:
                yield msg
            if state.done:
                return
            deadline = clock.now() + timeout

    async def answer(self, calls: dict[str, dict[str, Any]]) -> tuple[list[Message], bool]:
        """Answer a response's function calls; returns their messages and whether done_tool was called.

        Each answer goes back as a ``function_call_output`` item; unless the done tool was called,
        ``response.create`` then asks the model to go on. An agent that closes the socket as it
        calls its done tool ended the session: its calls are kept, not lost with the answers.
        """
        clock, done = self.ctx.clock, False
        ending = any(call["name"] == self.done_tool for call in calls.values())
        hung_up = False
        out: list[Message] = []
        for call_id, call in calls.items():
            name = call["name"]
            args, problem = _arguments(call["arguments"])
            out.append(ToolCall(name=name, args=args, id=call_id, at=clock.now()))
            if problem:
                out.append(
                    RawResponse(
                        body={"event": "bad_arguments", "name": name, "arguments": problem}, at=clock.now()
                    )
                )
            if name == self.done_tool:
                done = True
            elif name not in self.tool_results and self.fuzzer.mode(name) is None:
                out.append(RawResponse(body={"event": "unknown_tool", "name": name}, at=clock.now()))
            result = await self.fuzzer.answer(name, partial(self._configured, name, args))
            mode = self.fuzzer.mode(name)
            if mode is not None:
                out.append(RawResponse(body={"event": "fuzz", "tool": name, "mode": mode}, at=clock.now()))
            out.append(ToolResult(name=name, result=result, id=call_id, at=clock.now()))
            if hung_up:
                continue
            try:
                await self.send(self.dialect.function_output(call_id, result_text(result)))
            except TargetError:
                if not ending:
                    raise
                hung_up = True  # an agent may hang up as it calls its done tool: the calls still happened
        if not done:
            await self.send(self.dialect.response_create())
        return out, done

    def _configured(self, name: str, args: dict[str, Any]) -> Any:
        if name not in self.tool_results:
            return (
                dict(DONE_RESULT) if name == self.done_tool else {"error": f"no result configured for {name}"}
            )
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


def test_mode(ctx: TargetContext) -> str | None:
    """The test's own ``mode``, which overrides the target's."""
    return ctx.mode


def _arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """A call's arguments as a dict, and the raw text when it was not a JSON object."""
    if isinstance(raw, dict):
        return raw, None
    if raw in (None, ""):
        return {}, None
    try:
        value = loads_json(raw)
    except (TypeError, ValueError):
        return {}, str(raw)
    return (value, None) if isinstance(value, dict) else ({}, str(raw))
