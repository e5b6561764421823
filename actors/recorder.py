"""The Recorder: turns the messages of a run into its Transcript, as they arrive.

It is the one place a transcript is written, so every target fills the same structure: a user
turn per ``UserTurn``; an agent turn per ``AgentTurn`` with the tool calls, raw responses and
status that came before it; the handoff; and the test's captures, applied to each agent turn as
it arrives so that later user turns can say ``{{captured.NAME}}``.

It also bounds what a transcript holds of the agent (``Limits``): a turn's text past ``turn_text``
ends the run with a limit error (the text kept up to the limit), so does a turn's tool call past
``tool_calls`` (the calls kept up to the limit, a ``truncated`` event saying so), and raw answers past
``transcript_size`` are stored as ``{"truncated": true, "bytes": N, "head": ...}`` marks.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from tamesu.kernel.events import (
    AgentDone,
    Captured,
    CaptureSkipped,
    DtmfSent,
    HandoffSignalFailed,
    IncompleteTurn,
    Interrupted,
    RunError,
    SessionStarted,
    Tactic,
    Truncated,
)
from tamesu.kernel.messages import (
    AgentPartial,
    AgentTurn,
    AudioSpan,
    Dtmf,
    ErrorMsg,
    Event,
    Handoff,
    Interrupt,
    Message,
    MetricMsg,
    RawResponse,
    SessionEnd,
    SessionStart,
    ToolCall,
    ToolResult,
    UserTurn,
)
from tamesu.kernel.transcript import AudioSegment, HandoffInfo, ToolCallRecord, Transcript, Turn
from tamesu.limits import DEFAULT_LIMITS, LimitExceeded, Limits, payload_head, payload_size
from tamesu.untrusted import loads_json

from .actor import Actor

if TYPE_CHECKING:
    from tamesu.clock import Clock
    from tamesu.templates import Scope

__all__ = ["Recorder", "json_path_values"]


def json_path_values(path: str, data: Any) -> list[Any]:
    """Every value ``path`` selects in one raw response; a JSON string is parsed first."""
    from tamesu.jsonpath import find_in_message

    if isinstance(data, (str, bytes)):
        try:
            data = loads_json(data)
        except ValueError:
            return []
    if not isinstance(data, (dict, list)):
        return []
    return find_in_message(path, data)


def _segments(spans: Sequence[AudioSpan]) -> list[AudioSegment]:
    return [AudioSegment(start=s.start, end=s.end, channel=s.channel, text=s.text) for s in spans]


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


class Recorder(Actor):
    """Builds the transcript; forwards each finished ``AgentTurn`` so the simulator can answer it."""

    drivable: ClassVar[bool] = True

    def __init__(
        self,
        transcript: Transcript,
        *,
        scope: Scope,
        clock: Clock,
        captures: Sequence[Any] = (),
        handoff_signal: Any = None,
        limits: Limits = DEFAULT_LIMITS,
        **actor_options: Any,
    ) -> None:
        super().__init__(**actor_options)
        self.transcript = transcript
        self.scope = scope
        self.clock = clock
        self.captures = list(captures)
        self._extracts = bool(self.captures) and any(getattr(cap, "extract", None) for cap in self.captures)
        """Some capture needs a model (``extract``): only then is an agent turn awaited for it."""
        self.handoff_signal = handoff_signal
        self.limits = limits
        self._text = 0
        """Characters of the agent's text in the turn being received."""
        self._stored = 0
        """Bytes of raw answers the transcript holds."""
        self._truncated = False
        self.finished = asyncio.Event()
        """Set when the session ended or failed."""
        self.error: ErrorMsg | None = None
        self.reported_metrics: dict[str, float] = {}
        self._partials: list[str] = []
        self._tools: list[ToolCallRecord] = []
        self._raw: list[Any] = []
        self._status: int | None = None
        self._turn_started: float | None = None
        self._handoff_this_turn = False
        self._skipped: set[str] = set()
        self._user_turns = len(transcript.user_turns()) if transcript.turns else 0
        self._agent_turns = len(transcript.agent_turns()) if transcript.turns else 0
        """Turns of each role so far (each new turn's ``index`` is the next)."""
        self.router: Any = None
        """The run's model router, set by the graph; ``extract`` captures need it."""
        self.ledger: Any = None

    def now(self) -> float:
        return self.clock.now()

    async def handle(self, msg: Message) -> None:
        if isinstance(msg, AgentTurn):
            self._agent_turn(msg)
            if self._extracts:
                await self._extract(self.transcript.turns[-1])
            await self.send(msg)
            return
        handler = _HANDLERS.get(type(msg))
        if handler is not None:
            handler(self, msg)

    async def on_end(self, msg: SessionEnd | ErrorMsg) -> None:
        if isinstance(msg, ErrorMsg):
            self.error = msg
            self.transcript.events.append(RunError(at=msg.at, kind=msg.kind, message=msg.message))
            self.finish("error")
        else:
            self.finish(msg.reason)

    def finish(self, reason: str) -> None:
        """End the transcript (idempotent): a half-received agent turn is kept, marked incomplete."""
        if self.finished.is_set():
            return
        if self._partials or self._tools or self._raw:
            self.transcript.events.append(IncompleteTurn(at=self.clock.now()))
            users = self.transcript.user_turns()
            cut = AgentTurn(
                text="".join(self._partials),
                at=self.clock.now(),
                sent_at=users[-1].sent_at if users else None,
                first_byte_at=self._turn_started,
            )
            self._agent_turn(cut, complete=False)
        if self.transcript.end_reason is None:
            self.transcript.end_reason = reason
        self.transcript.duration = self.clock.now()
        self.finished.set()

    def snapshot(self) -> Transcript:
        """A view of the transcript so far whose lists later turns do not change."""
        t = self.transcript
        return msgspec.structs.replace(t, turns=list(t.turns), captures=dict(t.captures))

    def live(self) -> Transcript:
        """The transcript itself, for a reader that is done with it before the next turn arrives."""
        return self.transcript

    def _session_start(self, msg: SessionStart) -> None:
        self.transcript.events.append(SessionStarted(at=msg.at, session=msg.session))

    def _user_turn(self, msg: UserTurn) -> None:
        self._user_turns += 1
        self.transcript.turns.append(
            Turn(
                role="user",
                text=msg.text,
                index=self._user_turns,
                source=msg.source,
                reasoning=msg.reasoning,
                data=msg.data,
                sent_at=msg.at,
                dtmf=msg.data.get("dtmf") if msg.data else None,
            )
        )
        if msg.tactic:
            self.transcript.events.append(
                Tactic(at=msg.at, turn=self._user_turns, tactic=msg.tactic, source=msg.source)
            )

    def _heard(self, at: float) -> None:
        if self._turn_started is None:
            self._turn_started = at

    def _partial(self, msg: AgentPartial) -> None:
        self._heard(msg.at)
        self._text += len(msg.text)
        over = self._text - self.limits.turn_text
        if over > 0:
            self._partials.append(msg.text[: len(msg.text) - over])
            raise self._too_much_text(self._agent_turns + 1)
        self._partials.append(msg.text)

    def _too_much_text(self, turn: int) -> LimitExceeded:
        return LimitExceeded(
            f"agent turn {turn} gathered more than {self.limits.turn_text} characters of text",
            setting="turn_text",
        )

    def _tool_call(self, msg: ToolCall) -> None:
        self._heard(msg.at)
        self._room_for_a_tool_call()
        self._tools.append(ToolCallRecord(name=msg.name, args=dict(msg.args), id=msg.id))

    def _room_for_a_tool_call(self) -> None:
        limit = self.limits.tool_calls
        if len(self._tools) < limit:
            return
        self.transcript.events.append(Truncated(at=self.clock.now(), what="tool_calls", limit=limit))
        raise LimitExceeded(
            f"agent turn {self._agent_turns + 1} made more than {limit} tool calls", setting="tool_calls"
        )

    def _tool_result(self, msg: ToolResult) -> None:
        for call in reversed(self._tools):
            if (msg.id is not None and call.id == msg.id) or (msg.id is None and call.name == msg.name):
                call.result = msg.result
                return
        self._room_for_a_tool_call()
        self._tools.append(ToolCallRecord(name=msg.name, id=msg.id, result=msg.result))

    def _raw_response(self, msg: RawResponse) -> None:
        self._heard(msg.at)
        self._raw.append(self._kept(msg.body))
        if msg.status is not None:
            self._status = msg.status

    def _handoff(self, msg: Handoff) -> None:
        self._handoff_this_turn = True
        if self.transcript.handoff is None:
            turn = self._agent_turns + 1
            self.transcript.handoff = HandoffInfo(turn=turn, to=msg.to, summary=msg.summary)

    def _dtmf(self, msg: Dtmf) -> None:
        if msg.direction == "received":
            self.transcript.dtmf_received += msg.digits
        self.transcript.events.append(DtmfSent(at=msg.at, digits=msg.digits, direction=msg.direction))

    def _metric(self, msg: MetricMsg) -> None:
        self.reported_metrics[msg.name] = msg.value

    def _interrupt(self, msg: Interrupt) -> None:
        self.transcript.events.append(Interrupted(at=msg.at))

    def _event(self, msg: Event) -> None:
        self.transcript.events.append(msg.event)

    def _kept(self, body: Any) -> Any:
        """``body``, or its truncation mark once the transcript holds ``transcript_size`` bytes of raw answers."""
        size = payload_size(body)
        if self._stored + size <= self.limits.transcript_size:
            self._stored += size
            return body
        if not self._truncated:
            self._truncated = True
            self.transcript.events.append(
                Truncated(at=self.clock.now(), what="raw", limit=self.limits.transcript_size)
            )
        return {"truncated": True, "bytes": size, "head": payload_head(body, 200)}

    def _agent_turn(self, msg: AgentTurn, *, complete: bool = True) -> None:
        text = msg.text or "".join(self._partials)
        too_long = len(text) > self.limits.turn_text
        if too_long:
            text = text[: self.limits.turn_text]
        self._agent_turns += 1
        turn = Turn(
            role="agent",
            text=text,
            index=self._agent_turns,
            tool_calls=self._tools,
            raw=self._raw,
            status=msg.status if msg.status is not None else self._status,
            sent_at=msg.sent_at,
            first_byte_at=msg.first_byte_at,
            end_at=msg.end_at if complete else None,
            first_audio_at=msg.first_audio_at,
            audio=_segments(msg.audio) if msg.audio else [],
            unread=msg.unread if not text else None,
            refusal=msg.refusal,
        )
        self.transcript.turns.append(turn)
        if (
            complete
            and self.handoff_signal is not None
            and not self._handoff_this_turn
            and self.transcript.handoff is None
        ):
            self._detect_handoff(turn)
        if self.captures:
            self._capture(turn)
        if msg.done:
            self.transcript.events.append(AgentDone(at=msg.at, turn=turn.index))
        self._partials, self._tools, self._raw = [], [], []
        self._status = None
        self._turn_started = None
        self._handoff_this_turn = False
        self._text = 0
        if too_long and complete:
            raise self._too_much_text(turn.index)

    def _capture(self, turn: Turn) -> None:
        for cap in self.captures:
            name = cap.name
            if name in self.transcript.captures:
                continue
            value = self._capture_value(cap, turn)
            if value is not None:
                text = _as_text(value)
                self.transcript.captures[name] = text
                self.scope.set(f"captured.{name}", text)
                self.transcript.events.append(Captured(at=self.clock.now(), name=name, turn=turn.index))

    def _capture_value(self, cap: Any, turn: Turn) -> Any:
        regex = getattr(cap, "regex", None)
        path = getattr(cap, "json_path", None)
        if regex:
            try:
                m = re.search(regex, turn.text)
            except re.error as exc:
                self._skip(cap.name, f"invalid regex: {exc}")
                return None
            if m:
                return m.group(1) if m.re.groups else m.group(0)
        if path:
            for raw in turn.raw:
                try:
                    values = json_path_values(path, raw)
                except Exception as exc:
                    self._skip(cap.name, f"invalid JSONPath: {exc}")
                    return None
                if values:
                    return values[0]
        return None

    async def _extract(self, turn: Turn) -> None:
        """``extract`` captures: a model copies the described value out of the turn (first turn that has it)."""
        for cap in self.captures:
            description = getattr(cap, "extract", None)
            if not description or cap.name in self.transcript.captures or not turn.text.strip():
                continue
            if self.router is None or not self.router.model_for("judge"):
                self._skip(cap.name, "extract captures need a model: set models.judge or models.default")
                continue
            from tamesu.errors import TamesuError
            from tamesu.judging import extract_value

            try:
                value = await extract_value(self.router, description, turn.text, ledger=self.ledger)
            except TamesuError as exc:
                self._skip(cap.name, f"extract failed: {exc}")
                continue
            if value is not None:
                self.transcript.captures[cap.name] = value
                self.scope.set(f"captured.{cap.name}", value)
                self.transcript.events.append(Captured(at=self.clock.now(), name=cap.name, turn=turn.index))

    def _skip(self, name: str, reason: str) -> None:
        if name not in self._skipped:
            self._skipped.add(name)
            self.transcript.events.append(CaptureSkipped(at=self.clock.now(), name=name, reason=reason))

    def _detect_handoff(self, turn: Turn) -> None:
        """The target's ``handoff:`` signal, for adapters that do not report a Handoff themselves."""
        if self.handoff_signal is None:
            return
        from tamesu.targets.handoff import detect_handoff

        try:
            found = detect_handoff(
                self.handoff_signal,
                text=turn.text,
                tool_calls=turn.tool_calls,
                raw=turn.raw,  # type: ignore[arg-type]
            )
        except Exception as exc:
            self.transcript.events.append(HandoffSignalFailed(at=self.clock.now(), message=str(exc)))
            return
        if found is not None:
            self.transcript.handoff = HandoffInfo(turn=turn.index, to=found.to, summary=found.summary)


_HANDLERS: dict[type, Callable[[Recorder, Any], None]] = {
    SessionStart: Recorder._session_start,
    UserTurn: Recorder._user_turn,
    AgentPartial: Recorder._partial,
    ToolCall: Recorder._tool_call,
    ToolResult: Recorder._tool_result,
    RawResponse: Recorder._raw_response,
    Handoff: Recorder._handoff,
    Dtmf: Recorder._dtmf,
    MetricMsg: Recorder._metric,
    Interrupt: Recorder._interrupt,
    Event: Recorder._event,
}
"""What the recorder does with each data message other than an AgentTurn (a table of the class's
functions, not of bound methods: those would tie every recorder into a reference cycle). None of
them awaits anything, so an idle recorder handles these messages the moment they arrive."""
Recorder.sync_handlers = _HANDLERS
