"""The attacker of a red-team test: its scripted opening first, then adaptive turns from a model.

The opening needs no model, so a suite's red team runs offline against its deterministic
detectors. With a simulator model the attack goes on: the model reads the agent's answers and
picks the next tactic (the playbook's, or escalate / reframe / split / switch language), the same
attacker an ordinary test gets from ``persona.adversarial``. Every turn names its tactic, which
the transcript records as an event; once a deterministic detector fires the attacker stops
(``end_reason: attack_succeeded``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tamesu.kernel.messages import UserTurn
from tamesu.redteam.detectors import early_signals, first_hit

if TYPE_CHECKING:
    from tamesu.config import Persona, Scenario
    from tamesu.kernel.transcript import Transcript
    from tamesu.models.router import ModelRouter
    from tamesu.models.usage import UsageLedger
    from tamesu.playbooks.model import AttackPlan, Move
    from tamesu.templates import Scope
    from tamesu.users.model_user import ModelUser

__all__ = ["Attacker"]


class Attacker:
    """A ``UserSimulator`` playing one attack."""

    reads_at_once = False

    def __init__(
        self,
        plan: AttackPlan,
        scenario: Scenario,
        scope: Scope,
        *,
        router: ModelRouter | None = None,
        persona: Persona | None = None,
        language: str | None = None,
        seed: int | None = None,
        ledger: UsageLedger | None = None,
        suite_dir: str = ".",
    ) -> None:
        self.plan = plan
        self.signals = early_signals(plan)
        self.scope = scope
        self.max_turns = scenario.max_turns
        self.end_reason: str | None = None
        self.waiting = False
        self._pos = 0
        self._checked = 0
        """Agent turns the detectors have read already."""
        self.model: ModelUser | None = None
        if router is not None and router.model_for("simulator"):
            from tamesu.config import Scenario as ScenarioModel
            from tamesu.users.model_user import ModelUser

            self.model = ModelUser(
                ScenarioModel(goal=plan.goal, max_turns=scenario.max_turns),
                scope,
                router,
                persona=persona,
                language=language,
                seed=seed,
                ledger=ledger,
                suite_dir=suite_dir,
            )

    async def next_turn(self, transcript: Transcript) -> UserTurn | None:
        self.waiting = False
        if transcript.end_reason is not None:
            return self._ended(transcript.end_reason)
        agent_turns = len(transcript.agent_turns())
        if agent_turns > self._checked:
            hit = first_hit(self.signals, transcript, self.scope, since=self._checked)
            self._checked = agent_turns
            if hit is not None:
                return self._ended("attack_succeeded")
        if len(transcript.user_turns()) >= self.max_turns:
            return self._ended("max_turns")
        if self._pos < len(self.plan.opening):
            move = self.plan.opening[self._pos]
            self._pos += 1
            return self._scripted(move, transcript)
        if self.model is None:
            return self._ended("opening_done")
        turn = await self.model.next_turn(transcript)
        if turn is None:
            return self._ended(self.model.end_reason or "done")
        return turn

    def _scripted(self, move: Move, transcript: Transcript) -> UserTurn:
        text = move.say
        if "{{" in text:
            from tamesu.templates import render_text

            scope = (
                self.scope.child({"captured": dict(transcript.captures)})
                if transcript.captures
                else self.scope
            )
            text = render_text(text, scope)
        data = {"dtmf": move.dtmf} if move.dtmf else None
        return UserTurn(
            text=text, data=data, source="script", tactic=move.tactic, speech_level_db=move.speech_level_db
        )

    def _ended(self, reason: str) -> UserTurn | None:
        """Nothing more to say, and why."""
        self.end_reason = reason
        return None
