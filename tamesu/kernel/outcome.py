"""What a run gives back: its assertions' results, the graph's outcome and the run's result.

``GraphOutcome`` is what a placement hands back for one run (the transcript, the assertion results
or an infrastructure error); ``RunResult`` is one attempt as it is appended to results.jsonl and
read by reports, history and ``--resume``. Both are msgspec Structs: they cross processes and are
written often. A result record carries the results format it was written in (``format``).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from tamesu.kernel.transcript import FORMAT, Transcript

__all__ = ["AssertionResult", "CheckState", "Finding", "GraphOutcome", "Outcome", "RunResult", "count_states"]

Outcome = Literal["passed", "failed", "error", "quarantined", "inconclusive"]
"""A run's outcome; ``inconclusive``: nothing failed, but a judge could not tell (format 4)."""

CheckState = Literal["passed", "failed", "error", "skipped", "inconclusive"]
"""What became of one check: it held, it did not, it could not be evaluated (``error``: an
infrastructure error), it was not evaluated here (``skipped``: a model, key or extra it needs is
missing), or it was evaluated and the evidence settles it neither way (``inconclusive``)."""


class AssertionResult(msgspec.Struct, kw_only=True, gc=False):
    name: str
    """What the report calls it: the kind, prefixed defaults/ or slo/ or pack:NAME/ where it came from."""
    kind: str
    passed: bool
    expected: Any = None
    actual: Any = None
    message: str = ""
    error: bool = False
    on_turn: int | str | None = None
    skipped: bool = False
    """Not evaluated: what it needs is missing here; ``message`` says what (``passed`` is False)."""
    inconclusive: bool = False
    """Evaluated, but it cannot be told either way (a judge's "cannot tell"; ``passed`` is False)."""

    @property
    def state(self) -> CheckState:
        """The check's one word: error, skipped and inconclusive before passed or failed."""
        if self.error:
            return "error"
        if self.skipped:
            return "skipped"
        if self.inconclusive:
            return "inconclusive"
        return "passed" if self.passed else "failed"

    @classmethod
    def skip(cls, reason: str) -> AssertionResult:
        """A check that was not evaluated because ``reason`` (a model, a key, an extra is missing)."""
        return cls(name="", kind="", passed=False, skipped=True, message=reason)

    @classmethod
    def cannot_tell(cls, *, expected: Any = None, actual: Any = None, message: str = "") -> AssertionResult:
        """A check whose evidence settles it neither way: not a pass, not a fail."""
        return cls(
            name="",
            kind="",
            passed=False,
            inconclusive=True,
            expected=expected,
            actual=actual,
            message=message,
        )

    @classmethod
    def of(cls, ok: bool, *, expected: Any = None, actual: Any = None, message: str = "") -> AssertionResult:
        """A result whose name and kind the caller (``evaluate``) fills in."""
        return cls(name="", kind="", passed=ok, expected=expected, actual=actual, message=message)

    @classmethod
    def failed_to_evaluate(cls, message: str) -> AssertionResult:
        return cls(name="", kind="", passed=False, error=True, message=message)


def count_states(results: Any) -> dict[CheckState, int]:
    """How many checks ended in each state (only the states seen)."""
    out: dict[CheckState, int] = {}
    for r in results:
        out[r.state] = out.get(r.state, 0) + 1
    return out


class Finding(msgspec.Struct, kw_only=True, gc=False):
    """A red-team attack that succeeded: at which agent turn, how it was seen, how bad it is
    (``tamesu.redteam.findings`` makes them)."""

    playbook: str
    attack: str
    rule: str
    """The attack kind (``playbook/attack``): the SARIF rule."""
    severity: Literal["critical", "high", "medium", "low"]
    detector: str
    turn: int | None = None
    """The agent turn (1-based) on which the attack succeeded; None when only a judge could tell."""
    tactic: str | None = None
    """The tactic of the user turn that got that answer."""
    evidence: str = ""
    suite: str = ""
    test_id: str = ""
    run_id: str = ""
    file: str = ""
    line: int = 0
    column: int = 0


class GraphOutcome(msgspec.Struct, kw_only=True, gc=False):
    """What one run produced; redacted, and cheap to send back from a Ray worker."""

    transcript: Transcript
    results: list[AssertionResult] = msgspec.field(default_factory=list)
    error: str | None = None
    """Set when the run is an infrastructure error (then ``results`` is empty)."""
    error_kind: str | None = None
    """agent, capacity, adapter, config, model, budget, simulator, internal, timeout, cancelled, worker."""
    retryable: bool = False
    retry_after: float | None = None
    """error_kind "capacity": the seconds the agent asked to wait before another session."""


class RunResult(msgspec.Struct, kw_only=True, gc=False):
    format: int = FORMAT
    """The results format the record was written in (a record without one is format 1, the same
    fields)."""
    run_id: str
    test_id: str
    test_name: str
    suite: str
    target: str
    outcome: Outcome
    assertions: list[AssertionResult] = msgspec.field(default_factory=list)
    error: str | None = None
    """What went wrong, for outcome error (already redacted)."""
    error_kind: str | None = None
    case: str | None = None
    language: str | None = None
    repeat_index: int = 0
    attempt: int = 1
    started_at: float = 0.0
    duration: float = 0.0
    tags: list[str] = msgspec.field(default_factory=list)
    metrics: dict[str, float] = msgspec.field(default_factory=dict)
    transcript_file: str | None = None
    """Where the attempt's redacted transcript is, relative to the run directory: the transcript log
    ``transcripts.jsonl`` (format 3), or a file of its own under ``transcripts/`` (formats 1-2)."""
    transcript_span: tuple[int, int] | None = None
    """(offset, length) of the transcript's line in the log; None: the file holds it alone."""
    quarantine: str | None = None
    turns: int = 0
    findings: list[Finding] = msgspec.field(default_factory=list)
    """Red-team runs: each attack that succeeded, at which turn, with the evidence."""
    final: bool = True
    """False on an attempt that the scheduler retries; ``--resume`` redoes runs with no final result."""
    agent_faults: dict[str, int] = msgspec.field(default_factory=dict)
    """The transcript's ``agent_faults``: every 5xx, refusal, timeout and drop of the agent in this
    attempt, the ones the connect policy retried included."""
    grid: dict[str, str] | None = None
    """``tamesu run --grid``: the cell of the grid this run played in (``{"line_quality": "pstn"}``)."""
    cause: str | None = None
    """A failed audio run: what made it fail, ``heard_differently`` (the agent's own transcript of
    the caller differs from what the caller said), ``tamesu_heard_differently`` (tamesu's STT of the
    agent differs from the agent's own words) or ``agent`` (neither)."""
