"""What happens to an invocation once its verdicts are in: its reports are written, the history
records it and, when an OTLP endpoint is configured, its runs are exported as OpenTelemetry traces.

These are the runner's publishers (``tamesu.runner.invocation.Publisher``): the faces pass
``PUBLISHERS`` to the runner, which knows nothing of reports. None may fail the run: a report that
cannot be written, a history or an exporter that fails becomes one note (a warning line), and
the invocation's exit code stays what its tests made it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tamesu.history import Invocation
    from tamesu.runner.invocation import Finished, Publisher

__all__ = ["PUBLISHERS", "export_telemetry", "record_history", "record_in_history", "write_reports"]


def write_reports(finished: Finished) -> None:
    """summary.json and report.html in the run directory; the JUnit, JSON and SARIF files asked for."""
    from tamesu.reports.json_report import summary, write_json
    from tamesu.reports.junit import write_junit

    result, opts, redactor = finished.result, finished.opts, finished.redactor
    summarised = summary(result)
    finished.store.write_json("summary.json", redactor.redact_obj(summarised))
    html = opts.html if opts.html is not None else getattr(finished.project, "html_report", True)
    if html:
        from tamesu.reports.html import write_html
        from tamesu.reports.rundir import RunDirectory

        store = finished.store
        try:
            result.report = write_html(RunDirectory.open(store.dir), store.dir / "report.html")
        except OSError as exc:  # the run's verdicts stand; the page can be made later with tamesu report
            finished.note(f"report.html not written: {exc}")
    if opts.junit:
        write_junit(result, opts.junit, redactor=redactor)
    if opts.json:
        write_json(result, opts.json, redactor=redactor, summarised=summarised)
    if opts.sarif:
        from tamesu.reports.sarif import write_sarif

        write_sarif(result, opts.sarif, redactor=redactor)


def record_in_history(finished: Finished) -> None:
    """Add the invocation to the project's history, or note why it was not."""
    from tamesu.history import invocation_of

    result = finished.result
    output = result.run_dir.parent if result.run_dir is not None else None
    record_history(
        invocation_of(result), project=finished.project, project_dir=finished.project_dir, output=output,
        note=finished.note,
    )  # fmt: skip


def export_telemetry(finished: Finished) -> None:
    """Export the runs as OpenTelemetry traces when ``telemetry`` names an endpoint."""
    from tamesu.telemetry import TelemetryError, export_invocation, otlp_endpoint

    settings = getattr(finished.project, "telemetry", None)
    endpoint = otlp_endpoint(settings)
    if endpoint is not None:
        try:
            export_invocation(finished.result, endpoint=endpoint, settings=settings)
        except TelemetryError as exc:
            finished.note(f"telemetry not exported: {exc}")


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


PUBLISHERS: tuple[Publisher, ...] = (write_reports, record_in_history, export_telemetry)
"""The reports first: the run directory is whole before anything outside it is told of the run."""
