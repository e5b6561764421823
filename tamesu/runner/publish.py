"""What happens to an invocation after its reports are written: the history records it and, when
an OTLP endpoint is configured, its runs are exported as OpenTelemetry traces.

Neither may fail the run: anything that goes wrong becomes one note (a warning line) and the
invocation's exit code stays what its tests made it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tamesu.history import Invocation
    from tamesu.runner.invocation import InvocationResult

__all__ = ["publish", "record_history"]


def publish(
    result: InvocationResult, *, project: Any, project_dir: Path | None, note: Callable[[str], None]
) -> None:
    """Record ``result`` in the history and export it, each at most costing a warning."""
    from tamesu.history import invocation_of

    output = result.run_dir.parent if result.run_dir is not None else None
    record_history(invocation_of(result), project=project, project_dir=project_dir, output=output, note=note)
    from tamesu.telemetry import TelemetryError, export_invocation, otlp_endpoint

    endpoint = otlp_endpoint(getattr(project, "telemetry", None))
    if endpoint is not None:
        try:
            export_invocation(result, endpoint=endpoint, settings=getattr(project, "telemetry", None))
        except TelemetryError as exc:
            note(f"telemetry not exported: {exc}")


def record_history(
    inv: Invocation,
    *,
    project: Any,
    project_dir: Path | None,
    output: Path | None,
    note: Callable[[str], None],
) -> None:
    """Add ``inv`` (a run's or a load test's) to the project's history, or note why it was not."""
    from tamesu.history import HistoryError, history_location, record

    try:
        location = history_location(project, project_dir, output=output)
        if location is not None:
            record(inv, location, cwd=project_dir or Path.cwd())
    except HistoryError as exc:
        note(f"history not recorded: {exc}")
