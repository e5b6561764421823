"""Two grid runs compared cell by cell: the pass rate of each cell before and after, with its interval.

A grid cell is a test of its own in the history (its test id ends with the cell, ``returns
{line_quality=pstn, background_noise=cafe@10}``), so ``tamesu diff`` already lists a cell's
regression; this pools each cell over the suite's audio tests, as the report's heat map does, and
says where on the grid the agent got better or worse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tamesu.runner.grid import cell_label, cell_of
from tamesu.stats import Difference, rate_difference

if TYPE_CHECKING:
    from tamesu.history.store import Invocation

__all__ = ["GridChange", "grid_changes", "grid_json", "grid_lines"]


@dataclass
class GridChange:
    """One cell on both sides: runs that passed, runs graded, and the difference of the rates."""

    cell: dict[str, str]
    a: tuple[int, int] | None
    b: tuple[int, int] | None
    rate: Difference | None = None


def _pooled(inv: Invocation) -> dict[tuple[tuple[str, str], ...], tuple[int, int]]:
    out: dict[tuple[tuple[str, str], ...], tuple[int, int]] = {}
    for test in inv.tests:
        cell = cell_of(test.test_id)
        if cell is None:
            continue
        key = tuple(cell.items())
        passed, runs = out.get(key, (0, 0))
        out[key] = (passed + test.passed, runs + test.runs)
    return out


def grid_changes(a: Invocation, b: Invocation, *, confidence: float = 0.95) -> list[GridChange]:
    """Every cell either side ran, in the order the newer run has them (then the older's)."""
    before, after = _pooled(a), _pooled(b)
    out = []
    for key in [*after, *(k for k in before if k not in after)]:
        ca, cb = before.get(key), after.get(key)
        rate = None
        if ca is not None and cb is not None:
            rate = rate_difference(ca[0], ca[1], cb[0], cb[1], confidence=confidence)
        out.append(GridChange(dict(key), ca, cb, rate))
    return out


def _side(side: tuple[int, int] | None) -> str:
    return "-" if side is None else f"{side[0]}/{side[1]}"


def grid_lines(changes: list[GridChange]) -> list[str]:
    """The ``tamesu diff`` text of the grid (no lines when neither side was a grid run)."""
    if not changes:
        return []
    lines = ["", "Grid (pass rate per cell, pooled over the audio tests):"]
    for c in changes:
        note = ""
        if c.rate is not None:
            note = (
                f"  {c.rate.estimate * 100:+.0f} points [{c.rate.low * 100:+.0f}, {c.rate.high * 100:+.0f}]"
            )
            note += " significant" if c.rate.significant else ""
        lines.append(f"  {cell_label(c.cell)}: {_side(c.a)} -> {_side(c.b)}{note}")
    return lines


def grid_json(changes: list[GridChange]) -> list[dict[str, Any]]:
    return [
        {
            "cell": c.cell,
            "before": None if c.a is None else {"passed": c.a[0], "runs": c.a[1]},
            "after": None if c.b is None else {"passed": c.b[0], "runs": c.b[1]},
            "difference": None
            if c.rate is None
            else {
                "estimate": c.rate.estimate,
                "low": c.rate.low,
                "high": c.rate.high,
                "significant": c.rate.significant,
            },
        }
        for c in changes
    ]
