"""The simulated user: given the conversation so far, what the user says next, or that it is done.

Every way of playing the user (a script, a model pursuing a goal, a counterpart agent) sits behind
``UserSimulator``, the one protocol the run graph's simulator actor talks to; ``make_simulator``
picks the one a run needs: ``tamesu.users.scripted_user.ScriptedUser``, ``tamesu.users.model_user.ModelUser``,
``tamesu.users.counterpart.CounterpartUser`` or ``tamesu.users.replay_user.ReplayUser`` (a recorded call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from tamesu.errors import ModelError
from tamesu.users.scripted_user import DEFAULT_MAX_TURNS, ScriptedUser

if TYPE_CHECKING:
    from tamesu.kernel.messages import UserTurn
    from tamesu.kernel.transcript import Transcript
    from tamesu.models.router import ModelRouter
    from tamesu.models.usage import UsageLedger
    from tamesu.run_spec import RunSpec
    from tamesu.targets.base import TargetAdapter
    from tamesu.templates import Scope

__all__ = ["UserSimulator", "make_simulator"]


@runtime_checkable
class UserSimulator(Protocol):
    """Plays the user. ``None`` from ``next_turn`` means the user has nothing to send; ``end_reason``
    says why (done, max_turns, agent, wait_for_unmet, diverged), and ``waiting`` is True when it would speak
    again after more agent output (a voice agent still reading out a menu)."""

    end_reason: str | None
    waiting: bool

    async def next_turn(self, transcript: Transcript) -> UserTurn | None: ...


def make_simulator(
    spec: RunSpec,
    scope: Scope,
    *,
    router: ModelRouter | None = None,
    ledger: UsageLedger | None = None,
    counterpart: TargetAdapter | None = None,
) -> UserSimulator:
    """The user for one run: a red-team attacker, a counterpart agent, the script alone, or a model
    pursuing the goal."""
    scenario = spec.test.scenario
    attack = spec.attack
    if attack is not None and scenario is not None:
        from tamesu.users.attacker import Attacker

        return Attacker(
            attack,
            scenario,
            scope,
            router=router,
            persona=spec.test.persona,
            language=spec.language,
            seed=spec.seed,
            ledger=ledger,
            suite_dir=spec.suite_dir,
        )
    if counterpart is not None and spec.test.counterpart is not None:
        from tamesu.users.counterpart import CounterpartUser

        return CounterpartUser(counterpart, spec.test.counterpart, scenario, scope)
    if scenario is not None and scenario.replay is not None:
        from tamesu.users.replay_user import ReplayUser

        return ReplayUser(scenario.replay, suite_dir=spec.suite_dir)
    if scenario is None or not scenario.goal:
        max_turns = scenario.max_turns if scenario is not None else DEFAULT_MAX_TURNS
        persona = spec.test.persona
        language = spec.language or (persona.language if persona is not None else None)
        return ScriptedUser(scenario, scope, max_turns=max_turns, suite_dir=spec.suite_dir, language=language)
    if router is None or not router.model_for("simulator"):
        raise ModelError(
            "scenario.goal needs a model to play the user: set models.simulator or models.default (see README)"
        )
    from tamesu.users.model_user import ModelUser

    persona = spec.test.persona
    return ModelUser(
        scenario,
        scope,
        router,
        persona=persona,
        language=spec.language,
        seed=spec.seed,
        ledger=ledger,
        suite_dir=spec.suite_dir,
    )
