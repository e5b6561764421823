"""Small in-process target adapters and spec builders for the run-graph tests.

These are real ``TargetAdapter`` classes registered under test-only type names with the config
model every talking target extends (``TalkingTarget``, importable where a Ray worker unpickles
these); the suite's union was built before they registered, so specs are built with
``TalkingTarget.model_construct``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any, ClassVar

from tamesu.assertions.evaluation import AssertionContext
from tamesu.config.assertion import Assertion
from tamesu.config.suite import Capture, Scenario, Test
from tamesu.config.target_base import TalkingTarget
from tamesu.errors import TargetError
from tamesu.kernel.messages import (
    AgentPartial,
    AgentTurn,
    Handoff,
    Message,
    RawResponse,
    ToolCall,
    ToolResult,
    UserTurn,
)
from tamesu.kernel.outcome import AssertionResult
from tamesu.run_spec import NamedAssertion, RunSpec
from tamesu.targets.base import TargetAdapter, target


class EchoAdapter(TargetAdapter):
    """Answers ``You said: X``; mentions an order for "order", calls a tool for "tool", ends on "bye"."""

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        text = user.text if user is not None else ""
        reply = f"You said: {text}"
        if "order" in text:
            reply += ". Your order is ORD-1234"
        yield AgentPartial(text=reply[: len(reply) // 2])
        if "tool" in text:
            yield ToolCall(name="lookup", args={"q": text}, id="c1")
            yield ToolResult(name="lookup", result={"found": True}, id="c1")
        if "human" in text:
            yield Handoff(to="billing", summary=text)
        yield RawResponse(body={"reply": reply, "eta": "3 days", "session": self.ctx.session}, status=200)
        yield AgentTurn(text=reply, done="bye" in text, status=200)


class GreeterAdapter(EchoAdapter):
    """Speaks first: ``turn(None)`` is its greeting."""

    agent_speaks_first: ClassVar[bool] = True

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        if user is None:
            yield AgentTurn(text="Welcome to the shop")
            return
        async for msg in super().turn(user):
            yield msg


class MenuAdapter(EchoAdapter):
    """A phone menu read out in parts: each ``turn(None)`` hears the next part (the last ones are
    silence, an empty turn); a user turn is echoed."""

    agent_speaks_first: ClassVar[bool] = True
    PARTS = ("Welcome to the shop. For billing,", "press 2. For sales, press 3.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.heard = 0

    @property
    def hears_unprompted(self) -> bool:
        return True

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        if user is None:
            part = self.PARTS[self.heard] if self.heard < len(self.PARTS) else ""
            self.heard += 1
            yield AgentTurn(text=part)
            return
        async for msg in super().turn(user):
            yield msg


class SpeechProbe(TargetAdapter):
    """Names the speech pool its run handed it (what an audio target would speak and listen with),
    under the run's metered view of it."""

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        yield AgentTurn(text=type(getattr(self.ctx.speech, "shared", self.ctx.speech)).__name__, done=True)


class FailingAdapter(EchoAdapter):
    """Answers once, then fails like an unreachable agent; the message quotes the auth header."""

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        if user is not None and "fail" in user.text:
            token = self.ctx.scope.lookup("secrets.AGENT_TOKEN")
            raise TargetError(f"503 from agent (Authorization: Bearer {token})", retryable=True)
        async for msg in super().turn(user):
            yield msg


class BuggyAdapter(TargetAdapter):
    """Breaks while connecting, the way a programming error would."""

    stopped: ClassVar[list[str]] = []
    """Run ids whose adapter was stopped (plain strings, so the class pickles by value)."""

    async def start(self) -> None:
        raise ValueError("cannot parse the greeting")

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        yield AgentTurn(text="never")

    async def stop(self) -> None:
        BuggyAdapter.stopped.append(self.ctx.run_id)


class _Live(dict):  # type: ignore[type-arg]
    """Adapters by run id; pickles empty, because the class travels to Ray workers by value."""

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (_Live, ())


class HangingAdapter(EchoAdapter):
    """Answers the first turn, then starts an answer it never finishes (until stopped)."""

    live: ClassVar[dict[str, HangingAdapter]] = _Live()

    def __init__(self, config: Any, ctx: Any) -> None:
        super().__init__(config, ctx)
        self.hanging = asyncio.Event()
        self.stopped = False
        self.answered = 0
        HangingAdapter.live[ctx.run_id] = self

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        if self.answered == 0:
            self.answered += 1
            async for msg in super().turn(user):
                yield msg
            return
        yield AgentPartial(text="Let me check that for y")
        self.hanging.set()
        await asyncio.Event().wait()

    async def stop(self) -> None:
        self.stopped = True


def last_reply_evaluator(spec: Any, ctx: AssertionContext) -> AssertionResult:
    """Test-only assertion kind: the last agent turn says exactly ``spec``."""
    agent = ctx.transcript.agent_turns()
    actual = agent[-1].text if agent else None
    return AssertionResult.of(actual == spec, expected=spec, actual=actual)


def register() -> None:
    """Register the test adapters and assertion kind (in this process, or in a Ray worker).

    The registries are imported here, not at module level: pickled by value for a Ray worker,
    a module-level registry would travel as a copy instead of naming the worker's own.
    """
    from tamesu.assertions.evaluation import assertion

    for name, adapter in (
        ("test-echo", EchoAdapter),
        ("test-greeter", GreeterAdapter),
        ("test-menu", MenuAdapter),
        ("test-failing", FailingAdapter),
        ("test-buggy", BuggyAdapter),
        ("test-speech", SpeechProbe),
        ("test-hanging", HangingAdapter),
    ):
        target(name, config=TalkingTarget)(adapter)
    assertion("test-last-reply", spec=str)(last_reply_evaluator)


class Check:
    """A NamedAssertion item of a test-only kind (the Assertion model only knows suite kinds)."""

    def __init__(self, kind: str, spec: Any, on_turn: int | str | None = None) -> None:
        self.kind, self.spec, self.on_turn = kind, spec, on_turn


def make_spec(
    *,
    type: str = "test-echo",
    say: Sequence[str] = ("hello",),
    script: Sequence[dict[str, Any]] | None = None,
    max_turns: int | None = None,
    capture: Sequence[dict[str, str]] = (),
    checks: Sequence[tuple[str, Any]] = (),
    vars: dict[str, str] | None = None,
    secrets: dict[str, str] | None = None,
    session_id: str | None = None,
    handoff: dict[str, str] | None = None,
    run_id: str = "greeting#1",
) -> RunSpec:
    """A RunSpec of one test against a test adapter; ``checks`` are (report name, assertion);
    ``script`` (steps) instead of ``say`` for other steps than say."""
    from tamesu.config.common import RESTSession
    from tamesu.config.target_base import HandoffSignal

    config = TalkingTarget.model_construct(
        type=type,
        session=RESTSession(id=session_id) if session_id is not None else None,
        handoff=HandoffSignal(**handoff) if handoff is not None else None,
    )
    test = Test(
        name="greeting",
        target="agent",
        scenario=Scenario.model_validate(
            {
                "script": list(script) if script is not None else [{"say": s} for s in say],
                **({"max_turns": max_turns} if max_turns else {}),
            }
        ),
        capture=[Capture(**c) for c in capture],
    )
    return RunSpec(
        run_id=run_id,
        test_id="greeting",
        test_name="greeting",
        suite="actors",
        suite_path="suite.yaml",
        suite_dir=".",
        target_name="agent",
        target=config,
        test=test,
        assertions=[NamedAssertion(name=name, item=item) for name, item in checks],
        vars=dict(vars or {}),
        secrets=dict(secrets or {}),
    )


def check(data: dict[str, Any]) -> Assertion:
    """A suite assertion, validated as a suite would write it."""
    return Assertion.model_validate(data)
