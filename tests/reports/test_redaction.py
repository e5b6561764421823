"""A secret sent in a header to a real loopback agent that echoes it back never reaches any output."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from tamesu import run_async
from tamesu.reports.console import ConsoleReporter
from tamesu.secrets import Redactor

pytestmark = pytest.mark.integration

SECRET = "tok-9f8e7d6c5b4a"

SUITE = """
suite: echo-auth
secrets: {{ TOKEN: env:TAMESU_TEST_ECHO_TOKEN }}
targets:
  api:
    type: rest
    url: "{url}/chat"
    headers: {{ Authorization: "Bearer {{{{secrets.TOKEN}}}}" }}
    request: {{ body: {{ message: "{{{{message}}}}" }} }}
    response: {{ text: $.reply }}
tests:
  - name: leaks the header
    target: api
    scenario: {{ max_turns: 1, script: [ {{ say: "hello" }} ] }}
    assert:
      - not_contains: "Bearer"
"""


@pytest.fixture
async def echo_auth() -> AsyncIterator[str]:
    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        return web.json_response(
            {"reply": f"you said {body['message']} with {request.headers['Authorization']}"}
        )

    app = web.Application()
    app.router.add_post("/chat", chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


async def test_secret_is_redacted_everywhere(
    echo_auth: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAMESU_TEST_ECHO_TOKEN", SECRET)
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.format(url=echo_auth))
    redactor = Redactor()
    out = io.StringIO()
    reporter = ConsoleReporter(stream=out, redactor=redactor, color="never")
    result = await run_async(
        [suite],
        reporter=reporter,
        redactor=redactor,
        argv=["tamesu", "run", "suite.yaml"],
        output=tmp_path / "runs",
        junit=tmp_path / "junit.xml",
        json=tmp_path / "report.json",
    )
    reporter.summary(result)
    assert result.exit_code == 1
    (run,) = result.results
    assert run.outcome == "failed"
    assert "with Bearer ***" in str(run.assertions[0].actual)

    console = out.getvalue()
    assert "you said hello with Bearer ***" in console
    files = [tmp_path / "junit.xml", tmp_path / "report.json", *sorted((tmp_path / "runs").rglob("*.json*"))]
    assert {f.name for f in files} >= {
        "junit.xml",
        "report.json",
        "results.jsonl",
        "settings.json",
        "summary.json",
        "transcripts.jsonl",
    }
    transcript = result.run_dir / "transcripts.jsonl"  # type: ignore[operator]
    assert "Bearer ***" in transcript.read_text()
    for f in [*files, transcript]:
        assert SECRET not in f.read_text(), f
    assert SECRET not in console
    assert json.loads((tmp_path / "report.json").read_text())["exit_code"] == 1
