"""Run history: every invocation recorded in a local SQLite file, listed and compared.

``record_invocation`` runs at the end of ``tamesu run``; ``tamesu history`` lists what is recorded
and ``tamesu diff`` compares two invocations (or two run directories) with ``compare``.
"""

from __future__ import annotations

from tamesu.history.changes import Comparison, MetricChange, TestChange, compare, flaky_tests
from tamesu.history.record import (
    git_state,
    history_location,
    invocation_of,
    invocation_of_load,
    invocation_of_run_dir,
    record,
    record_invocation,
)
from tamesu.history.store import HistoryDB, HistoryError, Invocation, RunRow, TestRow

__all__ = [
    "Comparison",
    "HistoryDB",
    "HistoryError",
    "Invocation",
    "MetricChange",
    "RunRow",
    "TestChange",
    "TestRow",
    "compare",
    "flaky_tests",
    "git_state",
    "history_location",
    "invocation_of",
    "invocation_of_load",
    "invocation_of_run_dir",
    "record",
    "record_invocation",
]
