"""The one word each verdict and each check state is shown as, in every report that prints them,
so the console, ``tamesu show`` and the HTML page never call the same thing two names."""

from __future__ import annotations

__all__ = ["CHECK_WORD", "VERDICT_WORD"]

VERDICT_WORD = {
    "passed": "PASS",
    "failed": "FAIL",
    "error": "ERROR",
    "quarantined": "QUAR",
    "inconclusive": "INCONCLUSIVE",
    "not_run": "SKIP",
}
"""A test's verdict (``not_run``: it never started)."""

CHECK_WORD = {
    "passed": "PASS",
    "failed": "FAIL",
    "error": "ERROR",
    "skipped": "SKIPPED",
    "inconclusive": "INCONCLUSIVE",
}
"""A check's state (``AssertionResult.state``)."""
