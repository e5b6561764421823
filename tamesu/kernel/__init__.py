"""The kernel: the values every layer exchanges, and nothing that acts on them.

``messages`` are what the actors of a run send each other; ``transcript`` and ``events`` are
what a run recorded (the one thing assertions read); ``outcome`` is what a run gives back
(``GraphOutcome``) and what results.jsonl holds (``RunResult``). The kernel imports only msgspec,
the standard library and ``tamesu.errors`` / ``tamesu.untrusted``, so any module may import it.
"""

from __future__ import annotations

from tamesu.kernel.events import CustomEvent, TranscriptEvent
from tamesu.kernel.outcome import AssertionResult, GraphOutcome, Outcome, RunResult
from tamesu.kernel.transcript import FORMAT, AudioSegment, HandoffInfo, ToolCallRecord, Transcript, Turn

__all__ = [
    "FORMAT",
    "AssertionResult",
    "AudioSegment",
    "CustomEvent",
    "GraphOutcome",
    "HandoffInfo",
    "Outcome",
    "RunResult",
    "ToolCallRecord",
    "Transcript",
    "TranscriptEvent",
    "Turn",
]
