"""OpenTelemetry export of an invocation: a trace with a span per run and per turn, sent to an
OTLP/HTTP collector when one is configured (tamesu.yaml ``telemetry.otlp_endpoint``, or the usual
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` variables; headers such as
an API key come from ``OTEL_EXPORTER_OTLP_HEADERS``, read by the exporter itself).

The spans are made after the run from its results and transcripts, with their real start and end
times, so exporting costs the run nothing while it goes. The OpenTelemetry SDK is imported only
here, on use (``pip install 'tamesu[otel]'``), with a tracer provider of its own, so an
application that embeds tamesu keeps its global one. Turn spans carry timings, roles and tool
names, never what was said.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tamesu.kernel.outcome import RunResult
    from tamesu.kernel.transcript import Transcript
    from tamesu.runner.invocation import InvocationResult

__all__ = ["TelemetryError", "export_invocation", "otlp_endpoint"]

EXPORT_TIMEOUT_S = 5.0


class TelemetryError(Exception):
    """The spans could not be made or sent (the SDK is missing, the collector refused them)."""


def otlp_endpoint(settings: Any) -> str | None:
    """The traces URL to send to, or None when nothing configures one."""
    configured = getattr(settings, "otlp_endpoint", None)
    if configured:
        return str(configured)
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if traces:
        return traces
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    return base.rstrip("/") + "/v1/traces" if base else None


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def export_invocation(
    result: InvocationResult, *, endpoint: str, settings: Any = None, timeout: float = EXPORT_TIMEOUT_S
) -> int:
    """Send the invocation's trace; returns how many spans were sent."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    except ImportError:
        raise TelemetryError("exporting to OTLP needs the otel extra: pip install 'tamesu[otel]'") from None

    class Checked(SpanExporter):
        """The OTLP exporter, remembering whether every batch was accepted."""

        def __init__(self, inner: Any) -> None:
            self.inner, self.failed, self.sent = inner, 0, 0

        def export(self, spans: Sequence[Any]) -> Any:
            outcome = self.inner.export(spans)
            if outcome == SpanExportResult.SUCCESS:
                self.sent += len(spans)
            else:
                self.failed += len(spans)
            return outcome

        def shutdown(self) -> None:
            self.inner.shutdown()

    service = getattr(settings, "service_name", None) or "tamesu"
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    exporter = Checked(OTLPSpanExporter(endpoint=endpoint, timeout=timeout))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    try:
        _trace(provider.get_tracer("tamesu"), result)
        provider.force_flush(int(timeout * 1000) + 1000)
    finally:
        provider.shutdown()
    if exporter.failed or not exporter.sent:
        raise TelemetryError(f"{endpoint} did not accept {exporter.failed or 'the'} span(s)")
    return exporter.sent


def _trace(tracer: Any, result: InvocationResult) -> None:
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    start = result.started_at
    root = tracer.start_span(
        "tamesu run",
        start_time=_ns(start),
        attributes={
            "tamesu.suites": list(result.suites),
            "tamesu.exit_code": result.exit_code,
            "tamesu.run_dir": str(result.run_dir or ""),
            **{f"tamesu.tests.{k}": v for k, v in result.counts.items()},
        },
    )
    if result.exit_code:
        root.set_status(Status(StatusCode.ERROR, f"exit code {result.exit_code}"))
    context = trace.set_span_in_context(root)
    for run in result.results:
        _run_span(tracer, context, run, _transcript(result.run_dir, run))
    root.end(end_time=_ns(start + result.duration))


def _run_span(tracer: Any, context: Any, run: RunResult, transcript: Transcript | None) -> None:
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    attributes: dict[str, Any] = {
        "tamesu.suite": run.suite,
        "tamesu.test_id": run.test_id,
        "tamesu.run_id": run.run_id,
        "tamesu.target": run.target,
        "tamesu.outcome": run.outcome,
        "tamesu.repeat_index": run.repeat_index,
        "tamesu.attempt": run.attempt,
        **{f"tamesu.metric.{k}": float(v) for k, v in run.metrics.items()},
    }
    span = tracer.start_span(
        f"run {run.run_id}", context=context, start_time=_ns(run.started_at), attributes=attributes
    )
    if run.outcome in ("failed", "error"):
        failed = [a.name for a in run.assertions if a.state in ("failed", "error")]
        span.set_status(Status(StatusCode.ERROR, run.error or f"failed: {', '.join(failed)}"))
    if transcript is not None:
        inner = trace.set_span_in_context(span)
        base = transcript.started_at or run.started_at
        for turn in transcript.turns:
            begin = turn.sent_at if turn.sent_at is not None else turn.end_at
            if begin is None:
                continue
            turn_attrs: dict[str, Any] = {"tamesu.turn.role": turn.role, "tamesu.turn.index": turn.index}
            if turn.latency_ms is not None and turn.role == "agent":
                turn_attrs["tamesu.turn.latency_ms"] = turn.latency_ms
            if turn.tool_calls:
                turn_attrs["tamesu.turn.tools"] = [c.name for c in turn.tool_calls]
            child = tracer.start_span(
                f"{turn.role} turn {turn.index}",
                context=inner,
                start_time=_ns(base + begin),
                attributes=turn_attrs,
            )
            child.end(end_time=_ns(base + max(begin, turn.end_at or begin)))
    span.end(end_time=_ns(run.started_at + run.duration))


def _transcript(run_dir: Path | None, run: RunResult) -> Transcript | None:
    if run_dir is None:
        return None
    from tamesu.runner.results import read_transcript

    return read_transcript(run_dir, run)
