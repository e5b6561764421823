"""OpenTelemetry export against a real OTLP/HTTP receiver on loopback."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tamesu.config.reporting import Telemetry
from tamesu.telemetry import otlp_endpoint

from .reports.runs import shop_agent, shop_run


class Receiver:
    """Accepts OTLP/HTTP protobuf trace exports (or refuses them with ``status``) and keeps the spans."""

    def __init__(self, status: int = 200) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        self.spans: list[Any] = []
        self.resources: list[Any] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if status == 200 and self.path == "/v1/traces":
                    request = ExportTraceServiceRequest.FromString(body)
                    for rs in request.resource_spans:
                        receiver.resources.append(rs.resource)
                        for ss in rs.scope_spans:
                            receiver.spans.extend(ss.spans)
                data = ExportTraceServiceResponse().SerializeToString() if status == 200 else b"refused"
                self.send_response(status if self.path == "/v1/traces" else 404)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="pip install 'tamesu[otel]'")
    r = Receiver()
    yield r
    r.close()


def _attrs(span: Any) -> dict[str, Any]:
    out = {}
    for kv in span.attributes:
        value = kv.value
        out[kv.key] = getattr(value, value.WhichOneof("value"))
    return out


@pytest.mark.integration
def test_a_run_is_exported_as_a_trace_with_a_span_per_run_and_turn(
    receiver: Receiver, tmp_path: Path
) -> None:
    root = tmp_path / "p"
    with shop_agent() as url:
        result = shop_run(
            root, url, project=f"telemetry: {{ otlp_endpoint: '{receiver.url}', service_name: shop-ci }}\n"
        )
    spans = {s.name: s for s in receiver.spans}
    run = spans["tamesu run"]
    assert _attrs(run)["tamesu.exit_code"] == result.exit_code == 1
    runs = [s for s in receiver.spans if s.name.startswith("run ")]
    assert sorted(s.name for s in runs) == sorted(f"run {r.run_id}" for r in result.results)
    assert all(s.parent_span_id == run.span_id and s.trace_id == run.trace_id for s in runs)
    greets = spans["run greets"]
    assert _attrs(greets)["tamesu.outcome"] == "passed" and "tamesu.metric.turn_latency_ms_p50" in _attrs(
        greets
    )
    turns = [s for s in receiver.spans if s.parent_span_id == greets.span_id]
    assert sorted(s.name for s in turns) == ["agent turn 1", "user turn 1"]
    agent = next(s for s in turns if s.name == "agent turn 1")
    assert (
        agent.start_time_unix_nano >= greets.start_time_unix_nano
        and agent.end_time_unix_nano <= greets.end_time_unix_nano
    )
    hostile = spans["run hostile reply"]
    assert hostile.status.code == 2  # ERROR
    assert all("pwned" not in str(_attrs(s)) for s in receiver.spans)  # what was said is not exported
    [resource] = {str(r) for r in receiver.resources}
    assert "shop-ci" in resource


@pytest.mark.integration
def test_a_collector_that_refuses_the_spans_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="pip install 'tamesu[otel]'")
    refusing = Receiver(status=400)
    try:
        from tamesu.reports.console import ConsoleReporter

        with shop_agent() as url:
            result = shop_run(
                tmp_path, url, project=f"telemetry: {{ otlp_endpoint: '{refusing.url}' }}\n",
                reporter=ConsoleReporter(color="never"),
            )  # fmt: skip
    finally:
        refusing.close()
    assert result.exit_code == 1
    assert f"note: telemetry not exported: {refusing.url} did not accept" in capsys.readouterr().out


@pytest.mark.unit
def test_the_endpoint_comes_from_tamesu_yaml_else_the_usual_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    assert otlp_endpoint(Telemetry()) is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")
    assert otlp_endpoint(Telemetry()) == "http://collector:4318/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:4318/custom")
    assert otlp_endpoint(None) == "http://traces:4318/custom"
    assert otlp_endpoint(Telemetry(otlp_endpoint="http://mine/v1/traces")) == "http://mine/v1/traces"
