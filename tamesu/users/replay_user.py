"""The user played by a recorded call: the caller's own turns, in order, each after the agent's.

``make_simulator`` (``tamesu.users.simulator``) gives a run this user when its scenario has a
``replay``. On a call each turn is the recorded audio (``UserTurn.audio``), through the test's
line and noise; on a text target it is the turn's transcript. Before a turn goes out, the agent's
words since the caller last spoke are compared with what the recorded agent said at that point:
when they share too little (the new agent asked something else), the caller's next words no
longer fit, and the replay stops as ``diverged`` instead of talking past the agent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tamesu.kernel.messages import AudioClip, UserTurn
from tamesu.kernel.outcome import AssertionResult

if TYPE_CHECKING:
    from tamesu.config import Replay
    from tamesu.kernel.transcript import Transcript, Turn

__all__ = ["Divergence", "ReplayUser", "divergence", "recorded_call", "replay_result", "word_overlap"]

_WORD = re.compile(r"[\w']+", re.UNICODE)


def word_overlap(a: str, b: str) -> float:
    """How much two turns share: the Dice coefficient of their word sets (1: the same words, 0: none)."""
    wa, wb = set(_WORD.findall(a.casefold())), set(_WORD.findall(b.casefold()))
    if not wa and not wb:
        return 1.0
    return 2 * len(wa & wb) / (len(wa) + len(wb))


@dataclass(frozen=True)
class Divergence:
    """Where a replay stopped fitting: the caller turn (1-based) that was not sent, and why."""

    turn: int
    overlap: float
    said: str
    recorded: str

    def message(self) -> str:
        return (
            f"diverged at caller turn {self.turn}: the agent said {self.said[:160]!r} where the recorded "
            f"agent said {self.recorded[:160]!r} (word overlap {self.overlap:.2f})"
        )


def divergence(replay: Replay, transcript: Transcript, sent: int) -> Divergence | None:
    """Whether the caller's next turn (after ``sent`` turns) no longer fits what the agent just
    said (None: it fits, or there is nothing recorded to compare with)."""
    if sent >= len(replay.turns) or replay.diverge_below <= 0:
        return None
    recorded = replay.opening if sent == 0 else replay.turns[sent - 1].agent
    said = " ".join(t.text for t in _since_user(transcript) if t.text.strip())
    if not recorded or (sent == 0 and not said):
        return None
    overlap = word_overlap(said, recorded)
    if overlap >= replay.diverge_below:
        return None
    return Divergence(sent + 1, round(overlap, 3), said, recorded)


def _since_user(transcript: Transcript) -> list[Turn]:
    turns = transcript.turns
    for i in range(len(turns) - 1, -1, -1):
        if turns[i].role == "user":
            return turns[i + 1 :]
    return list(turns)


class ReplayUser:
    """Plays ``scenario.replay``: no model, deterministic; ends ``done``, ``diverged`` or as the agent ended it."""

    reads_at_once = True

    def __init__(self, replay: Replay, *, suite_dir: Path | str = ".") -> None:
        self.replay = replay
        self.suite_dir = Path(suite_dir)
        self.end_reason: str | None = None
        self.waiting = False
        self.diverged: Divergence | None = None
        self.sent = 0
        self._channel = 0 if replay.caller == "left" else 1

    async def next_turn(self, transcript: Transcript) -> UserTurn | None:
        if transcript.end_reason is not None:
            self.end_reason = transcript.end_reason
            return None
        sent = self.sent
        if sent >= len(self.replay.turns):
            self.end_reason = "done"
            return None
        self.diverged = divergence(self.replay, transcript, sent)
        if self.diverged is not None:
            self.end_reason = "diverged"
            return None
        self.sent += 1
        turn = self.replay.turns[sent]
        return UserTurn(text=turn.say, audio=self._clip(sent), source="replay")

    def _clip(self, index: int) -> AudioClip | None:
        turn = self.replay.turns[index]
        if turn.clip is not None:
            return AudioClip(path=str(self._path(turn.clip)))
        if turn.start is not None and self.replay.recording is not None:
            return AudioClip(
                path=str(self._path(self.replay.recording)),
                channel=self._channel,
                start=turn.start,
                end=turn.end,
            )
        return None

    def _path(self, name: str) -> Path:
        path = Path(name)
        return path if path.is_absolute() else self.suite_dir / path


def recorded_call(replay: Replay, suite_dir: Path | str = ".") -> dict[str, object]:
    """What the report shows beside the new call: the recorded turns, and the recording's path."""
    out: dict[str, object] = {
        "turns": len(replay.turns),
        "opening": replay.opening,
        "recorded": [{"say": t.say, "agent": t.agent} for t in replay.turns],
    }
    if replay.recording is not None:
        path = Path(replay.recording)
        out["recording"] = str(path if path.is_absolute() else Path(suite_dir).resolve() / path)
        out["caller"] = replay.caller
    return out


def replay_result(replay: Replay, transcript: Transcript, suite_dir: Path | str = ".") -> AssertionResult:
    """The check every replayed test carries: the whole recorded call was played, or where it
    stopped fitting (diverged, or the agent hung up before the caller was done)."""
    sent, total = len(transcript.user_turns()), len(replay.turns)
    expected = recorded_call(replay, suite_dir)
    if transcript.end_reason == "diverged":
        found = divergence(replay, transcript, sent)
        message = found.message() if found is not None else f"diverged at caller turn {sent + 1}"
        actual: dict[str, object] = {"diverged_at": sent + 1}
        if found is not None:
            actual["overlap"] = found.overlap
        return _named(AssertionResult.of(False, expected=expected, actual=actual, message=message))
    if sent < total:
        why = (
            "the agent ended the call"
            if transcript.end_reason == "agent"
            else f"the call ended ({transcript.end_reason})"
        )
        return _named(
            AssertionResult.of(
                False,
                expected=expected,
                actual={"turns": sent, "end_reason": transcript.end_reason},
                message=f"{why} after caller turn {sent} of {total}",
            )
        )
    return _named(AssertionResult.of(True, expected=expected, actual={"turns": sent},
                                     message=f"the recorded caller's {total} turns were all replayed"))  # fmt: skip


def _named(result: AssertionResult) -> AssertionResult:
    result.name = result.kind = "replay"
    return result
