"""The kernel: the values every layer exchanges, and nothing that acts on them.

``messages`` are what the actors of a run send each other; ``transcript`` and ``events`` are
what a run recorded (the one thing assertions read); ``outcome`` is what a run gives back
(``GraphOutcome``) and what results.jsonl holds (``RunResult``). The kernel imports only msgspec,
the standard library and ``tamesu.errors`` / ``tamesu.untrusted``, so any module may import it.

Every kernel Struct is declared ``gc=False``: they are plain data (what the agent sent is decoded
JSON) and never refer back to what holds them, so the cycle collector need not track them; a text
run allocates a dozen a turn, and tracking them was a tenth of its CPU (benchmarks/conversations.py).
A value that could form a cycle does not belong in the kernel.
"""

from __future__ import annotations

from tamesu.kernel.events import CustomEvent, TranscriptEvent
from tamesu.kernel.outcome import AssertionResult, CheckState, GraphOutcome, Outcome, RunResult
from tamesu.kernel.transcript import FORMAT, AudioSegment, HandoffInfo, ToolCallRecord, Transcript, Turn

__all__ = [
    "FORMAT",
    "AssertionResult",
    "AudioSegment",
    "CheckState",
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
