"""How the reports show what a run cost: one line for the console, a cell per test.

The figures are ``tamesu.costs.cost_summary``'s (in summary.json and load-report.json as
``cost``); every report reads them from there, so the console, JSON, HTML and history agree.
"""

from __future__ import annotations

from typing import Any

__all__ = ["cost_fact", "cost_line", "usd"]


def usd(value: Any) -> str:
    """``$0.0123``; a cost under a hundredth of a cent keeps its first significant digits."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    if value and abs(value) < 0.0001:
        return f"${value:.2g}"
    return f"${value:.4f}"


def cost_line(cost: dict[str, Any]) -> str:
    """``cost: $0.0421 in all, $0.0042 per run, $0.0053 per pass (models $0.0400, speech ...)``."""
    parts = cost.get("parts") or {}
    shown = [
        f"{label} {usd(parts.get(key))}"
        for key, label in (
            ("models_usd", "models"),
            ("speech_usd", "speech"),
            ("call_minutes_usd", "call minutes"),
        )
        if parts.get(key)
    ]
    per_pass = cost.get("per_pass_usd")
    text = f"cost: {usd(cost.get('total_usd'))} in all, {usd(cost.get('per_run_usd'))} per run, " + (
        f"{usd(per_pass)} per pass" if per_pass is not None else "no run passed"
    )
    if shown:
        text += f" ({', '.join(shown)})"
    if cost.get("unpriced_speech"):
        text += "; hosted speech without a price in prices: counted as 0"
    return text


def cost_fact(cost: Any) -> str:
    """``cost $0.0421, $0.0053 per pass`` for a page's header; empty when nothing was spent."""
    if not isinstance(cost, dict) or not cost.get("total_usd"):
        return ""
    per_pass = cost.get("per_pass_usd")
    return f"cost {usd(cost.get('total_usd'))}, " + (
        f"{usd(per_pass)} per pass" if per_pass is not None else "no run passed"
    )
