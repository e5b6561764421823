"""What a run's graph leaves for grading (``tamesu.runner.grading``): the graph wires and drives,
the runner measures and grades what it played."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tamesu.kernel.outcome import AssertionResult
    from tamesu.kernel.transcript import Transcript
    from tamesu.models.router import ModelRouter
    from tamesu.models.usage import UsageLedger
    from tamesu.speech_pool import MeteredSpeech
    from tamesu.templates import Scope

__all__ = ["Played"]


@dataclass(frozen=True, slots=True)
class Played:
    """One run as its graph recorded it, so far: the live transcript (grading writes its
    ``metrics``), the scope its templates rendered in, the models it used and what they spent."""

    transcript: Transcript
    scope: Scope
    router: ModelRouter | None
    ledger: UsageLedger | None
    """The run's model usage; judges add theirs while grading (None: no model layer installed)."""
    reported_metrics: dict[str, float]
    """What the target measured itself; it wins over what the transcript gives."""
    speech: MeteredSpeech
    """What the run asked of each speech engine, for its cost."""
    adapter_results: list[AssertionResult] = field(default_factory=list)
    """The checks the target made itself (a browser test's assert steps): only once the run ended."""
