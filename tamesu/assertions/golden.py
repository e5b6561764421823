"""``golden``: the agent's turns against reference turns kept next to the suite.

``exact`` compares normalised text (case, whitespace and punctuation folded) turn by turn.
``similar`` scores each turn by word overlap: the F1 of the two turns' word multisets, that is
``2 * shared words / (words in reference + words in reply)``, 1.0 for the same words in any order,
0.0 for nothing in common; every turn must reach ``min`` (default 0.8) and the number of turns
must be the same. ``judge`` needs a model. ``tamesu run --update-golden`` rewrites the file with
the agent's turns of this run. The file stays inside the suite's folder, whatever a template in
its name renders to (an agent's captured value may be ``../../x``).
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

from tamesu.assertions.compare import shorten
from tamesu.assertions.conversation import NEEDS_A_MODEL
from tamesu.assertions.evaluation import AssertionContext, assertion
from tamesu.config.assertions.golden import GoldenAssertion
from tamesu.kernel.outcome import AssertionResult
from tamesu.untrusted import OutsideFolder, inside

__all__ = ["golden", "normalise", "read_golden", "word_overlap", "write_golden"]

DEFAULT_MIN = 0.8


def normalise(text: str) -> str:
    """Lower case, punctuation and symbols dropped, whitespace folded to single spaces."""
    kept = "".join(" " if unicodedata.category(ch)[0] in "PSZC" else ch for ch in text.casefold())
    return " ".join(kept.split())


def word_overlap(reference: str, reply: str) -> float:
    """Token F1 of the two texts' word multisets after ``normalise`` (1.0 when both are empty)."""
    a, b = Counter(normalise(reference).split()), Counter(normalise(reply).split())
    total = sum(a.values()) + sum(b.values())
    if total == 0:
        return 1.0
    return 2.0 * sum((a & b).values()) / total


def read_golden(path: Path) -> list[str]:
    """The reference agent turns: a JSON array of strings, or a transcript.json's agent turns."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, list) and all(isinstance(x, str) for x in data):
        return data
    if isinstance(data, dict) and isinstance(data.get("turns"), list):
        return [
            str(t.get("text", "")) for t in data["turns"] if isinstance(t, dict) and t.get("role") == "agent"
        ]
    raise ValueError(f"{path}: expected a JSON array of agent turns or a transcript.json")


def write_golden(path: Path, turns: list[str]) -> None:
    """Write the agent's turns as a pretty JSON array (UTF-8, newline at the end)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(turns, indent=2, ensure_ascii=False) + "\n"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _get(spec: Any, key: str) -> Any:
    return spec.get(key) if isinstance(spec, dict) else getattr(spec, key, None)


@assertion("golden", spec=GoldenAssertion)
async def golden(spec: GoldenAssertion, ctx: AssertionContext) -> AssertionResult:
    """The agent's turns match the reference turns (exact / similar), or rewrite them on update."""
    mode = _get(spec, "mode") or "similar"
    minimum = _get(spec, "min")
    minimum = DEFAULT_MIN if minimum is None else float(minimum)
    file = _get(spec, "file")
    inline = _get(spec, "turns")
    replies = [t.text for t in ctx.transcript.agent_turns()]
    try:
        path = inside(ctx.suite_dir, file, what="golden file") if file else None
    except OutsideFolder as exc:
        return AssertionResult.failed_to_evaluate(str(exc))

    if path is not None and ctx.update_golden:
        write_golden(path, replies)
        return AssertionResult.of(True, actual=replies, message=f"golden file updated: {file}")
    if inline is not None:
        reference = list(inline)
    elif path is None:
        return AssertionResult.failed_to_evaluate("golden needs a file or inline turns")
    elif not path.exists():
        return AssertionResult.failed_to_evaluate(
            f"golden file {file} does not exist; run `tamesu run --update-golden` to record it"
        )
    else:
        try:
            reference = read_golden(path)
        except (ValueError, OSError) as exc:
            return AssertionResult.failed_to_evaluate(f"cannot read golden file: {exc}")

    if len(reference) != len(replies):
        return AssertionResult.of(
            False,
            expected=reference,
            actual=replies,
            message=f"{len(replies)} agent turn(s), the golden reference has {len(reference)}",
        )
    if mode == "judge":
        return await _judge_turns(reference, replies, ctx)
    if mode == "exact":
        for n, (want, got) in enumerate(zip(reference, replies, strict=True), 1):
            if normalise(want) != normalise(got):
                return AssertionResult.of(
                    False,
                    expected=reference,
                    actual=replies,
                    message=f"turn {n} differs: expected {shorten(want)!r}, got {shorten(got)!r}",
                )
        return AssertionResult.of(True, expected=reference, actual=replies)
    raw = [word_overlap(want, got) for want, got in zip(reference, replies, strict=True)]
    scores = [round(s, 3) for s in raw]
    low = [(n, s) for n, s in enumerate(raw, 1) if s < minimum]
    if low:
        n, s = low[0]
        return AssertionResult.of(
            False,
            expected=reference,
            actual=replies,
            message=f"turn {n} overlaps {s:.2f} with the reference (min {minimum:g}): "
            f"expected {shorten(reference[n - 1])!r}, got {shorten(replies[n - 1])!r}; scores {scores}",
        )
    return AssertionResult.of(
        True, expected=reference, actual=replies, message=f"word overlap per turn: {scores}"
    )


async def _judge_turns(reference: list[str], replies: list[str], ctx: AssertionContext) -> AssertionResult:
    """mode judge: the judge model decides, turn by turn, whether the reply means the same."""
    if ctx.models is None:
        return AssertionResult.failed_to_evaluate(f"golden mode judge {NEEDS_A_MODEL}")
    from tamesu.errors import TamesuError
    from tamesu.judging import grade

    rubric = (
        "The REPLY means the same as the REFERENCE: the same facts, decisions and intent; wording may differ."
    )
    for n, (want, got) in enumerate(zip(reference, replies, strict=True), 1):
        try:
            verdict = await grade(
                ctx.models,
                rubric,
                f"REFERENCE: {want}\nREPLY: {got}",
                ledger=ctx.ledger,
                what="pair of turns",
            )
        except TamesuError as exc:
            return AssertionResult.failed_to_evaluate(f"golden judge: {exc}")
        if verdict.inconclusive:
            return AssertionResult.cannot_tell(
                expected=reference,
                actual=replies,
                message=f"turn {n}: the judge cannot tell: {verdict.reason}",
            )
        if not verdict.passed:
            return AssertionResult.of(
                False,
                expected=reference,
                actual=replies,
                message=f"turn {n} does not mean the same as the reference: {verdict.reason}",
            )
    return AssertionResult.of(True, expected=reference, actual=replies, message="every turn means the same")
