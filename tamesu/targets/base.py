"""The shape every target adapter has, and the registry that maps a suite's ``type:`` to one.

An adapter speaks the agent's wire protocol and translates it into run messages. It never
decides pass or fail: it reports what the agent said and did, and raises ``TargetError`` when the
agent cannot be reached or answers in a way that cannot be read.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from tamesu.errors import TargetError
from tamesu.http import RunCookies
from tamesu.limits import DEFAULT_LIMITS, Limits
from tamesu.registry import Registry
from tamesu.targets.faults import AgentFaults

if TYPE_CHECKING:
    import httpx

    from tamesu.actors.messages import Message, UserTurn
    from tamesu.actors.pools import SpeechPool
    from tamesu.assertions.base import AssertionResult
    from tamesu.clock import Clock
    from tamesu.config.target import Target as TargetConfig
    from tamesu.models.router import ModelRouter
    from tamesu.models.usage import UsageLedger
    from tamesu.secrets import Redactor
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
    extra: dict[str, Any] = field(default_factory=dict)
    cookies: RunCookies = field(default_factory=RunCookies)
    """Cookies the agent set in this run (the shared client keeps none)."""
    limits: Limits = DEFAULT_LIMITS
    """How much of the agent's answers may be read (tamesu.yaml ``limits:``)."""
    faults: AgentFaults = field(default_factory=AgentFaults)
    """The agent's faults the connect policy retried in this run (the run's transcript reports them)."""
    speech: SpeechPool | None = None
    """The run's speech engines (audio targets); None: this process's own."""


class TargetAdapter(ABC):
    """One conversation with one agent.

    ``start`` connects (and makes ``session.open``); ``turn`` sends one user turn (or ``None`` to hear
    an agent that speaks first) and yields the messages of the agent's answer, ending with exactly
    one ``AgentTurn``; ``stop`` closes everything, also after errors.
    """

    type_name: ClassVar[str] = ""
    agent_speaks_first: ClassVar[bool] = False

    def __init__(self, config: TargetConfig, ctx: TargetContext) -> None:
        self.config = config
        self.ctx = ctx

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
        return TargetError(self.ctx.redactor.redact(str(exc)), retryable=exc.retryable, kind=exc.kind)


targets: Registry[type[TargetAdapter]] = Registry("target type")


def target(name: str) -> Any:
    """Class decorator: register an adapter for ``type: name``."""

    def deco(cls: type[TargetAdapter]) -> type[TargetAdapter]:
        cls.type_name = name
        targets.add(name, cls)
        return cls

    return deco


def turn_text(user: UserTurn, target_type: str, mode: str | None = None) -> str:
    """The text a target sends for a user turn: its words, and where the type sends data as text
    (``tamesu.config.scriptparts``) the data as JSON on a line of its own.

    A part the type cannot send (files on rest, keypad digits in text mode) is never dropped: the
    turn fails as a configuration error naming the type, as ``tamesu validate`` does beforehand.
    """
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
