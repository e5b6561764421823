"""``scenario.replay``: a recorded call plays the caller, turn by turn.

``tamesu import calls`` writes these from recorded calls; a hand-written one is validated the same
way. Each caller turn is the recording's words as transcribed (sent as text to a text target) and
where its audio lies: an offset into ``recording`` or a ``clip`` of its own.
"""

from typing import Literal

from pydantic import model_validator
from pydantic_core import PydanticCustomError

from tamesu.config.common import ConfigModel, F, Fraction

__all__ = ["Replay", "ReplayTurn"]


class ReplayTurn(ConfigModel):
    """One turn of the recorded caller, and what the recorded agent answered to it."""

    say: str = F(
        "What the caller said (its transcript): the turn sent to a text target, and what the agent's own transcript is compared with.",
        "Hi, can I return shoes I bought 40 days ago?",
    )
    start: float | None = F(
        "Where the turn's audio begins in the recording, in seconds.", 3.12, default=None, ge=0
    )
    end: float | None = F(
        "Where the turn's audio ends in the recording, in seconds.", 5.86, default=None, gt=0
    )
    clip: str | None = F(
        "The turn's audio as a WAV file of its own (relative to the suite), instead of an offset into recording.",
        "calls/123/turn-1.wav",
        default=None,
    )
    agent: str | None = F(
        "What the recorded agent answered to this turn (the reference the new agent is compared with).",
        "Returns are accepted within 30 days of delivery.",
        default=None,
    )

    @model_validator(mode="after")
    def _span(self) -> "ReplayTurn":
        if (self.start is None) != (self.end is None):
            raise PydanticCustomError("replay_span", "start and end go together")
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise PydanticCustomError("replay_span", "end must come after start")
        return self


class Replay(ConfigModel):
    """A recorded call as the caller: its own audio (or words, on a text target), each turn sent after the agent finishes its own."""

    recording: str | None = F(
        "The recorded call (a stereo WAV, relative to the suite) the turns' start and end point into.",
        "calls/123.wav",
        default=None,
    )
    caller: Literal["left", "right"] = F(
        "Which channel of the recording is the caller (tamesu records the caller on the left).",
        "left",
        default="left",
    )
    opening: str | None = F(
        "What the recorded agent said before the caller's first turn (its greeting).",
        "Hi! You have reached Mochi Shoes. How can I help you today?",
        default=None,
    )
    diverge_below: Fraction = F(
        "The word overlap with the recorded agent's turn below which the caller's next turn no longer fits: the replay stops there as diverged (0 never stops).",
        0.3,
        default=0.3,
    )
    turns: list[ReplayTurn] = F(
        "The caller's turns in order.",
        [{"say": "Hi, can I return shoes I bought 40 days ago?", "start": 3.12, "end": 5.86}],
        min_length=1,
    )

    @model_validator(mode="after")
    def _audio_source(self) -> "Replay":
        for i, turn in enumerate(self.turns, start=1):
            if turn.clip is not None and turn.start is not None:
                raise PydanticCustomError(
                    "replay_audio", "turn {n}: a clip or a start/end offset, not both", {"n": i}
                )
            if turn.start is not None and self.recording is None:
                raise PydanticCustomError(
                    "replay_audio", "turn {n}: start/end point into recording, which is not set", {"n": i}
                )
        return self
