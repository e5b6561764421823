"""The shape every target adapter has, and the decorator that binds one to its target type.

The registry is the target types' own (``tamesu.config.kinds.target_kinds``): a type's config
model registers there and names its adapter as ``"module:Class"``; ``@target`` on the adapter
class binds the class itself, or registers a whole type at once (a plugin's config model and
adapter in one module).

An adapter speaks the agent's wire protocol and translates it into run messages. It never
decides pass or fail: it reports what the agent said and did, and raises ``TargetError`` when the
agent cannot be reached or answers in a way that cannot be read.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from tamesu.config.kinds import Audio, TargetKind, TargetKinds, target_kinds
from tamesu.errors import TargetError
from tamesu.http import RunCookies
from tamesu.limits import DEFAULT_LIMITS, Limits
from tamesu.wire.faults import AgentFaults

if TYPE_CHECKING:
    import httpx

    from tamesu.clock import Clock
    from tamesu.config.project import LiveKitConfig, SipConfig
    from tamesu.config.suite import Test
    from tamesu.config.target import TargetConfig
    from tamesu.kernel.messages import Message, UserTurn
    from tamesu.kernel.outcome import AssertionResult
    from tamesu.models.router import ModelRouter
    from tamesu.models.usage import UsageLedger
    from tamesu.secrets import Redactor
    from tamesu.speech_pool import SpeechPool
    from tamesu.templates import Scope

__all__ = ["TargetAdapter", "TargetContext", "target", "targets", "turn_text"]


@dataclass
class TargetContext:
    """What a run gives its target: names, templates, time, and shared clients."""

    name: str
    """The target's key in the suite."""
    run_id: str
    session: str
    """The rendered session id ({{session}})."""
    scope: Scope
    """Template scope: vars, secrets, session.NAME captures, env; the adapter adds message, sent, cursor."""
    clock: Clock
    http: httpx.AsyncClient
    """Shared HTTP client (aiohttp transport) with connection pooling; it keeps no cookies."""
    redactor: Redactor
    turn_timeout: float = 60.0
    suite_dir: str = "."
    models: ModelRouter | None = None
    """The invocation's model router (the model target, counterpart judges); None when none is configured."""
    ledger: UsageLedger | None = None
    """The run's own model usage."""
    fuzz: dict[str, Any] = field(default_factory=dict)
    """The test's fuzz_tools by tool name (model / realtime / pipecat targets)."""
    test: Test | None = None
    """The test being run: its persona, mode, scenario (None in a context made by hand)."""
    language: str | None = None
    """The run's language (``languages:``), over the persona's."""
    seed: int | None = None
    """The run's seed; the run id seeds what needs one when unset."""
    run_timeout: float | None = None
    """The longest the whole run may take, in seconds (a deadline for calls that carry one)."""
    output_dir: Path | None = None
    """The invocation's run directory (recordings go under it); None: nothing is written."""
    update_golden: bool = False
    """``tamesu run --update-golden``: baselines (a browser test's visual steps) are written, not compared."""
    max_goal_steps: int | None = None
    """The most actions a browser goal step may take (``defaults.max_goal_steps``); 15 when unset."""
    tts_engine: str | None = None
    """A TTS engine forced by name; the persona's voice picks one otherwise."""
    stt_engine: str | None = None
    """An STT engine forced by name."""
    detect_dtmf: bool = False
    """Listen for keypad tones in the agent's audio (a test asserts dtmf_received)."""
    shared_delegates: bool = False
    """The suite's remote agents serve every run at once: an A2A target opens its conversation in
    a context of its own (the session id), by which the agent under test's delegations are told apart."""
    counterpart: bool = False
    """This adapter plays the user (``counterpart:``) rather than being the target under test."""
    cookies: RunCookies = field(default_factory=RunCookies)
    """Cookies the agent set in this run (the shared client keeps none)."""
    limits: Limits = DEFAULT_LIMITS
    """How much of the agent's answers may be read (tamesu.yaml ``limits:``)."""
    faults: AgentFaults = field(default_factory=AgentFaults)
    """The agent's faults the connect policy retried in this run (the run's transcript reports them)."""
    speech: SpeechPool | None = None
    """The run's speech engines (audio targets); None: this process's own."""
    sip: SipConfig | None = None
    """tamesu.yaml's ``sip:`` block (proxy, credentials, inbound number); None when unset."""
    livekit: LiveKitConfig | None = None
    """tamesu.yaml's ``livekit:`` block, for a sip target's LiveKit trunk; None when unset."""

    @property
    def mode(self) -> str | None:
        """The test's ``mode``, which overrides the target's."""
        return getattr(self.test, "mode", None)


class TargetAdapter(ABC):
    """One conversation with one agent.

    ``start`` connects (and makes ``session.open``); ``turn`` sends one user turn (or ``None`` to hear
    an agent that speaks first) and yields the messages of the agent's answer, ending with exactly
    one ``AgentTurn``; ``stop`` closes everything, also after errors.
    """

    type_name: ClassVar[str] = ""
    agent_speaks_first: ClassVar[bool] = False

    def __init__(self, config: Any, ctx: TargetContext) -> None:
        self.config = config
        self.ctx = ctx

    @property
    def hears_unprompted(self) -> bool:
        """Whether ``turn(None)`` may be asked at any point of the session, to hear the agent go on
        without the user saying anything: a call, where the agent talks on its own time."""
        return False

    async def start(self) -> None:  # noqa: B027  (optional hook)
        """Connect and open the session; the default needs nothing."""

    @abstractmethod
    def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        """Send one user turn and yield the agent's answer, ending with one AgentTurn."""

    async def whole_answer(self, user: UserTurn | None) -> list[Message] | None:
        """The whole answer to one user turn when it comes at once (one request, one body),
        ending with one AgentTurn; None: this turn streams, use ``turn``. A turn's hot path,
        so an agent answering in one piece needs no async generator."""
        return None

    async def stop(self) -> None:  # noqa: B027  (optional hook)
        """Close connections; must not raise."""

    def results(self) -> list[AssertionResult]:
        """Checks the target made itself during the run (a browser test's assert steps), graded
        with the test's assertions."""
        return []

    def redacted(self, exc: TargetError) -> TargetError:
        """The same error with every secret value of the run masked in its message."""
        return exc.reworded(self.ctx.redactor.redact(str(exc)))

    async def redacting(self, messages: AsyncIterator[Message]) -> AsyncIterator[Message]:
        """``messages`` (a turn of a call or of text), its errors with the run's secrets masked."""
        try:
            async for msg in messages:
                yield msg
        except TargetError as exc:
            raise self.redacted(exc) from None


targets: TargetKinds = target_kinds
"""The target types (``tamesu.config.kinds``): ``targets.adapter(type)`` is a type's adapter class."""


def target(
    name: str,
    *,
    config: type[TargetConfig],
    audio: Audio = "never",
    parts: dict[str, frozenset[str]] | None = None,
    summary: str = "",
) -> Any:
    """Class decorator: ``cls`` is the adapter of ``type: name``, whose config model is ``config``.

    A type whose config model registered already (naming this class lazily) gets the class bound;
    otherwise the whole type is registered here, with ``audio``, ``parts`` and ``summary`` as
    ``tamesu.config.kinds.target_type`` takes them.
    """

    def deco(cls: type[TargetAdapter]) -> type[TargetAdapter]:
        cls.type_name = name
        if name in targets:
            entry = targets.get(name)
            if entry.config is not config:
                raise ValueError(f"target type {name!r} is registered with another config model")
            entry.adapter = cls
        else:
            targets.add(
                TargetKind(name, config, adapter=cls, audio=audio, parts=dict(parts or {}), summary=summary)
            )
        return cls

    return deco


def turn_text(user: UserTurn, target_type: str, mode: str | None = None) -> str:
    """The text a target sends for a user turn: its words, and where the type sends data as text
    (``tamesu.config.scriptparts``) the data as JSON on a line of its own.

    A part the type cannot send (files on rest, keypad digits in text mode) is never dropped: the
    turn fails as a configuration error naming the type, as ``tamesu validate`` does beforehand.
    """
    if user.data is None and not user.files:
        return user.text  # words alone: every type sends them (the turn of nearly every run)
    from tamesu.config.scriptparts import PART_WORDS, carriers, script_parts

    parts = script_parts(target_type, mode) or frozenset({"say"})
    data = user.data
    sent = {"dtmf"} if data is not None and set(data) == {"dtmf"} else {"data"} if data is not None else set()
    if user.files:
        sent.add("files")
    refused = sorted(sent - parts)
    if refused:
        part = refused[0]
        raise TargetError(
            f"a {target_type} target cannot send {PART_WORDS[part]} in a script step"
            f" ({part} is sent by {carriers(part)} targets)",
            retryable=False,
            kind="config",
        )
    if data is None:
        return user.text
    from tamesu.fuzz import result_text

    return "\n".join(t for t in (user.text, result_text(data)) if t)
