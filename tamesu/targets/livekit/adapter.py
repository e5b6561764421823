"""The ``livekit`` target: tamesu joins the agent's LiveKit room as the caller, with the real SDK.

``start`` renders the room name and the caller's identity, takes the target's ``token`` or mints
one with ``api_key`` / ``api_secret``, joins, dispatches ``dispatch.agent_name`` through the agent
dispatch API, and waits ``join_timeout`` for the agent (``agent_identity_prefix``, or a participant
of kind agent). In text mode a user turn is a text stream on ``data_topic`` (``lk.chat``, as
LiveKit's agents read chat) and the agent's answer is whatever text it sends back: text streams on
the data topic or ``lk.transcription`` and user data packets on the data topic; the turn ends a
moment after a complete message with nothing more coming. In audio mode the call runs on the voice
stages (``VoiceSession``): the caller's line feeds a published microphone track, the agent's track
is played to the listener, its ``lk.transcription`` words are the transcript unless
``transcript_source`` says stt. Keypad digits travel both ways as SIP DTMF packets; the agent
leaving the room ends the call.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from tamesu.durations import parse_duration
from tamesu.errors import MissingExtraError, TargetError
from tamesu.kernel.messages import AgentTurn, Dtmf, Message, RawResponse, ToolCall, ToolResult, UserTurn
from tamesu.targets.base import TargetAdapter, target, turn_text
from tamesu.targets.livekit.settings import LivekitTarget, with_project_server
from tamesu.templates import render_text
from tamesu.wire.connect import ConnectPolicy, open_session

if TYPE_CHECKING:
    from tamesu.targets.base import TargetContext
    from tamesu.voice.session import VoiceSession

    from .livekit_audio import RoomAudio
    from .livekit_jobs import JobReader
    from .livekit_link import AgentText, RoomLink

__all__ = ["LivekitAdapter", "api_url", "mint_token"]

SETTLE_S = 0.5
"""Quiet after a complete message that ends a text turn (an agent may answer in several)."""
GREETING_WAIT_S = 3.0
"""Text mode: how long a LiveKit Agents agent (one with ``lk.agent.state``) has, once joined, to
start a greeting (to think, speak or send text) before the caller speaks first."""
LISTENING_S = 0.5
"""Text mode: an agent listening this long after it joined is not greeting."""


def api_url(url: str) -> str:
    """The server's HTTP(S) address for its Twirp APIs, from a ws(s) or http(s) url."""
    for ws, http in (("wss://", "https://"), ("ws://", "http://")):
        if url.startswith(ws):
            return http + url[len(ws) :]
    return url


def mint_token(key: str, secret: str, *, identity: str, room: str) -> str:
    """A join token for the simulated caller, signed with the server's key and secret."""
    from livekit import api

    grants = api.VideoGrants(
        room_join=True, room=room, can_publish=True, can_subscribe=True, can_publish_data=True
    )
    return (
        api.AccessToken(key, secret).with_identity(identity).with_name("tamesu").with_grants(grants).to_jwt()
    )


@target("livekit", config=LivekitTarget)
class LivekitAdapter(TargetAdapter):
    """One conversation in one LiveKit room; see the module docstring."""

    config: LivekitTarget

    def __init__(self, config: LivekitTarget, ctx: TargetContext) -> None:
        super().__init__(with_project_server(config, ctx.livekit), ctx)
        config = self.config
        self.policy = ConnectPolicy.from_config(config.connect)
        self.mode = ctx.mode or config.mode
        self.agent_speaks_first = self.mode == "audio"  # type: ignore[misc]
        self.link: RoomLink | None = None
        self.audio: RoomAudio | None = None
        self.session: VoiceSession | None = None
        self.room_name = ""
        self.jobs: JobReader | None = None
        """The room's dispatches as the server keeps them (with api_key and api_secret)."""
        self._relay: asyncio.Future[None] | None = None

    @property
    def hears_unprompted(self) -> bool:
        return self.session is not None

    async def start(self) -> None:
        from tamesu.extras import missing_modules

        if missing_modules(["livekit.rtc", "livekit.api"]):
            raise MissingExtraError("the livekit SDK and livekit-api (for livekit targets)", extra="livekit")
        ctx, scope, config = self.ctx, self.ctx.scope, self.config
        scope.set("session", ctx.session)
        try:
            if config.session is not None and config.session.open is not None:
                await open_session(ctx, config.session.open, self.policy)
            if not config.url:
                raise TargetError(
                    "a livekit target needs url (or livekit.url in tamesu.yaml)",
                    retryable=False,
                    kind="config",
                )
            url = render_text(config.url, scope)
            self.room_name = render_text(config.room, scope)
            token = await self._token(url)
            await self._join(url, token)
        except TargetError as exc:
            await self.stop()
            raise self.redacted(exc) from None

    async def _token(self, url: str) -> str:
        config, scope = self.config, self.ctx.scope
        if config.token:
            return render_text(config.token, scope)
        if not (config.api_key and config.api_secret):
            raise TargetError(
                "a livekit target needs token, or api_key and api_secret (here or under livekit: in tamesu.yaml)",
                retryable=False,
                kind="config",
            )
        identity = (
            render_text(config.identity, scope) if config.identity else f"tamesu-sim-{secrets.token_hex(4)}"
        )
        key, secret = render_text(config.api_key, scope), render_text(config.api_secret, scope)
        self.ctx.redactor.add(secret)
        return mint_token(key, secret, identity=identity, room=self.room_name)

    async def _join(self, url: str, token: str) -> None:
        from .livekit_link import RoomLink

        config, ctx = self.config, self.ctx
        self.link = link = RoomLink(
            clock=ctx.clock,
            data_topic=config.data_topic,
            agent_prefix=config.agent_identity_prefix,
            max_chars=ctx.limits.turn_text,
        )
        if self.mode == "audio":
            from tamesu.voice.session import VoiceSession
            from tamesu.voice.settings import VoiceSettings

            from .livekit_audio import RATE, RoomAudio

            self.audio = RoomAudio(link)
            settings = VoiceSettings.build(config, ctx, encoding="pcm16", rate=RATE)
            self.session = VoiceSession(settings, ctx, self.audio)
            self.audio.session = self.session
        if config.api_key and config.api_secret:
            from .livekit_jobs import JobReader

            scope = ctx.scope
            self.jobs = JobReader(
                url=api_url(url),
                api_key=render_text(config.api_key, scope),
                api_secret=render_text(config.api_secret, scope),
                room=self.room_name,
            )
        await link.connect(url, token)
        if config.dispatch is not None:
            await self._dispatch(url, config.dispatch.agent_name)
        try:
            await link.wait_for_agent(parse_duration(config.join_timeout))
        except TargetError as exc:
            problems = await self.jobs.problems() if self.jobs is not None else []
            if not problems:
                raise
            raise TargetError(f"{exc}: {'; '.join(problems)}", retryable=exc.retryable) from None
        if self.mode == "text" and link.runs_agents:
            self.agent_speaks_first = await self._greets()  # type: ignore[misc]
        if self.audio is not None and self.session is not None:
            session = self.session
            link.on_state = lambda state: session.heard_answering(state == "thinking")
            await self.audio.publish()
            await self.session.start()
            self._relay = asyncio.ensure_future(self._relay_to_session())

    async def _greets(self) -> bool:
        """Text mode: whether the agent greets (see ``GREETING_WAIT_S``), read from its state."""
        link, clock = self.link, self.ctx.clock
        assert link is not None
        deadline = clock.now() + GREETING_WAIT_S
        while link.queue.empty() and link.state not in ("thinking", "speaking"):
            listening = link.state == "listening"
            wait = min(LISTENING_S if listening else GREETING_WAIT_S, deadline - clock.now())
            link.state_changed.clear()
            try:
                await asyncio.wait_for(link.state_changed.wait(), max(wait, 0.0))
            except asyncio.TimeoutError:
                if listening or clock.now() >= deadline:
                    return not link.queue.empty()
        return True

    async def _dispatch(self, url: str, agent_name: str) -> None:
        config, scope = self.config, self.ctx.scope
        if not (config.api_key and config.api_secret):
            raise TargetError(
                "dispatch needs api_key and api_secret to call the dispatch API",
                retryable=False,
                kind="config",
            )
        from livekit import api

        client = api.LiveKitAPI(
            api_url(url), render_text(config.api_key, scope), render_text(config.api_secret, scope)
        )
        try:
            await client.agent_dispatch.create_dispatch(
                api.CreateAgentDispatchRequest(agent_name=agent_name, room=self.room_name)
            )
        except Exception as exc:
            raise TargetError(f"the dispatch of {agent_name} into {self.room_name} failed: {exc}") from None
        finally:
            await client.aclose()

    async def _relay_to_session(self) -> None:
        """Audio mode: what the link queues (words, digits, the agent leaving) reaches the session."""
        link, session = self.link, self.session
        assert link is not None and session is not None
        while True:
            kind, value = await link.queue.get()
            now = self.ctx.clock.now()
            if kind == "text" and value.text:
                session.heard_transcript(value.text)
            elif kind == "caller_text" and value.text and value.final:
                session.heard_caller_transcript(value.text)
            elif kind == "dtmf":
                session.heard_message(Dtmf(digits=value, direction="received", at=now), activity=False)
            elif kind in ("tool", "tool_result"):
                session.heard_message(value, activity=False)
            elif kind == "problem":
                session.heard_message(RawResponse(body={"error": value}, at=now), activity=False)
            elif kind == "left":
                failure = await self._job_failure()
                session.closed(1000 if failure is None else 1011, failure or value)
                return

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        if self.link is None:
            raise TargetError("the livekit target was not started", retryable=False, kind="adapter")
        turn = self.session.turn(user) if self.session is not None else self._text_turn(user)
        async for msg in self.redacting(turn):
            yield msg

    async def _text_turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        link, clock = self.link, self.ctx.clock
        assert link is not None
        sent_at = clock.now()
        if user is not None:
            if link.left is not None:
                failure = await self._job_failure()
                raise TargetError(
                    f"the conversation has ended ({link.left}{f': {failure}' if failure else ''})"
                )
            data = user.data
            try:
                if data is not None and set(data) == {"dtmf"}:
                    await link.send_dtmf(str(data["dtmf"]))
                    yield Dtmf(digits=str(data["dtmf"]), at=clock.now())
                else:
                    await link.send_text(turn_text(user, "livekit", "text"))
            except TargetError as exc:
                failure = await self._job_failure()
                raise TargetError(f"{exc}: {failure}") if failure else exc from None
        said: list[str] = []
        heard = False
        first_at: float | None = None
        done = False
        deadline = sent_at + self.ctx.turn_timeout
        while True:
            wait = 0.0 if done else SETTLE_S if heard else deadline - clock.now()
            try:
                kind, value = await asyncio.wait_for(link.queue.get(), max(wait, 0.0))
            except asyncio.TimeoutError:
                if heard or done:
                    break
                raise TargetError(
                    f"no answer from the agent within {self.ctx.turn_timeout:g}s in room {self.room_name}"
                ) from None
            now = clock.now()
            if kind == "left":
                failure = await self._job_failure()
                if failure is not None:
                    raise TargetError(f"{value} in room {self.room_name}: {failure}")
                done = True
                await link.settle(SETTLE_S)  # what it was still sending as it left, then the turn ends
                continue
            if kind in ("tool", "tool_result"):
                call: ToolCall | ToolResult = value
                yield call
                continue
            if kind == "problem":
                yield RawResponse(body={"error": value}, at=now)
                continue
            if kind == "dtmf":
                heard = True
                first_at = first_at or now
                yield Dtmf(digits=value, direction="received", at=now)
                continue
            if kind == "caller_text":
                continue  # the agent's transcript of what we said, not its answer
            text: AgentText = value
            yield RawResponse(body={"topic": text.topic, "text": text.text, "final": text.final}, at=now)
            if text.problem:
                yield RawResponse(body={"error": text.problem, "topic": text.topic}, at=now)
            if text.text and text.final:
                heard = True
                first_at = first_at or now
                said.append(text.text)
        yield AgentTurn(
            text="\n".join(said),
            done=done,
            sent_at=sent_at,
            first_byte_at=first_at,
            end_at=clock.now(),
            at=clock.now(),
        )

    async def _job_failure(self) -> str | None:
        """Why the agent's job failed, when the server says it did (see ``livekit_jobs``)."""
        link = self.link
        if self.jobs is None or link is None or link.agent is None:
            return None
        return await self.jobs.failure(str(link.agent.identity))

    async def stop(self) -> None:
        if self._relay is not None:
            self._relay.cancel()
        if self.session is not None:
            await self.session.stop()
        if self.audio is not None:
            await self.audio.close()
        if self.link is not None:
            link, self.link = self.link, None
            await link.close()
