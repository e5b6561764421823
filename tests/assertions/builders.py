"""Hand-built transcripts for the assertion tests."""

from __future__ import annotations

from typing import Any

from tamesu.kernel.transcript import ToolCallRecord, Transcript, Turn


def convo(*lines: str | Turn, **fields: Any) -> Transcript:
    """``"user: hi", "agent: hello"`` -> a Transcript with numbered turns (Turn objects pass through)."""
    turns: list[Turn] = []
    counts = {"user": 0, "agent": 0}
    for line in lines:
        if isinstance(line, Turn):
            turn = line
        else:
            role, _, text = line.partition(": ")
            turn = Turn(role=role, text=text)  # type: ignore[arg-type]
        counts[turn.role] += 1
        turn.index = turn.index or counts[turn.role]
        turns.append(turn)
    return Transcript(turns=turns, **fields)


def agent(text: str = "", **fields: Any) -> Turn:
    return Turn(role="agent", text=text, **fields)


def call(name: str, **args: Any) -> ToolCallRecord:
    return ToolCallRecord(name=name, args=args)
