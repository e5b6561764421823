"""A red-team finding: which attack succeeded, at which agent turn, how it was seen, how bad it is.

A run of an attack yields one finding per detector that fired and per failed ``red_team.assert``
check. Findings live in the run's result (``RunResult.findings``), so every report reads them from
the results alone (``Finding`` is a kernel value, ``tamesu.kernel.outcome``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from tamesu.kernel.events import Tactic
from tamesu.kernel.outcome import Finding

if TYPE_CHECKING:
    from tamesu.kernel.transcript import Transcript

__all__ = ["SEVERITY_ORDER", "Finding", "by_severity", "finding_line", "findings_of", "severity_counts"]

SEVERITY_ORDER = {"critical": 0, "high": 1, "medium": 2, "low": 3}
EVIDENCE_LIMIT = 600
"""Characters of evidence kept per finding (agent output is untrusted and unbounded)."""
_TURN = re.compile(r"^turn (\d+): ?")


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    return text if len(text) <= EVIDENCE_LIMIT else text[: EVIDENCE_LIMIT - 1] + "…"


def _turn_of(result: Any) -> int | None:
    if isinstance(result.on_turn, int):
        return result.on_turn
    m = _TURN.match(result.actual) if isinstance(result.actual, str) else None
    return int(m.group(1)) if m else None


def _tactic(transcript: Transcript | None, agent_turn: int | None) -> str | None:
    """The tactic of the last user turn before that agent turn."""
    if transcript is None or agent_turn is None:
        return None
    user_turn = 0
    for turn in transcript.turns:
        if turn.role == "user":
            user_turn = turn.index
        elif turn.index == agent_turn:
            break
    for event in transcript.events:
        if isinstance(event, Tactic) and event.turn == user_turn:
            return event.tactic
    return None


def findings_of(spec: Any, results: Sequence[Any], transcript: Transcript | None) -> list[Finding]:
    """The findings of one red-team run (none for a run of an ordinary test)."""
    plan = spec.attack
    if plan is None:
        return []
    out = []
    for r in results:
        if r.state != "failed" or not (r.kind == "detector" or r.name.startswith("red_team/")):
            continue
        turn = _turn_of(r)
        detector = r.name.removeprefix("detector:")
        evidence = r.actual if r.actual not in (None, "") else r.message
        if isinstance(evidence, str):
            evidence = _TURN.sub("", evidence).lstrip()
        out.append(
            Finding(
                playbook=plan.playbook,
                attack=plan.attack,
                rule=plan.rule,
                severity=plan.severity,
                detector=detector,
                turn=turn,
                tactic=_tactic(transcript, turn),
                evidence=_text(evidence),
                suite=spec.suite,
                test_id=spec.test_id,
                run_id=spec.run_id,
                file=plan.file,
                line=plan.line,
                column=plan.column,
            )
        )
    return out


def by_severity(findings: Iterable[Finding]) -> list[Finding]:
    """Most severe first; then by test, run and turn."""
    return sorted(
        findings,
        key=lambda f: (SEVERITY_ORDER.get(f.severity, 9), f.test_id, f.run_id, f.turn or 0),
    )


def severity_counts(findings: Iterable[Finding]) -> dict[str, int]:
    """Findings per severity, every severity present (zero when none)."""
    out = dict.fromkeys(SEVERITY_ORDER, 0)
    for f in findings:
        out[f.severity] = out.get(f.severity, 0) + 1
    return out


def finding_line(f: Finding) -> str:
    """``HIGH red_team/p/a: detector at agent turn 2 (tactic: reframe): evidence``, for people."""
    where = f"at agent turn {f.turn}" if f.turn is not None else "in the conversation"
    tactic = f" (tactic: {f.tactic})" if f.tactic else ""
    run = f.run_id if f.run_id != f.test_id else f.test_id
    evidence = " ".join(f.evidence.split())
    if len(evidence) > 200:
        evidence = evidence[:199] + "…"
    return f"{f.severity.upper()} {run}: {f.detector} {where}{tactic}: {evidence}"
