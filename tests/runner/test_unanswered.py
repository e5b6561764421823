"""An agent that refuses every turn, or whose replies tamesu cannot read, never passes: the run is
an error naming the status and the start of the body, or the path and the keys the reply had.

Real runs against a loopback agent that answers 401 to ``/deny`` (JSON and server-sent events
alike) and ``{"answer", "id"}`` to ``/chat``.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from tamesu import run_async
from tamesu.kernel.transcript import Transcript, Turn
from tamesu.reports.console import ConsoleReporter
from tamesu.reports.show import render_run
from tamesu.runner.invocation import InvocationResult
from tamesu.runner.results import read_transcript
from tamesu.runner.unanswered import unanswered

SUITE = """
suite: shop
targets:
  deny:
    type: rest
    url: "{url}/deny"
    request: {{ body: {{ message: "{{{{message}}}}" }} }}
    response: {{ text: $.reply }}
  deny_stream:
    type: rest
    url: "{url}/deny"
    streaming: sse
    request: {{ body: {{ message: "{{{{message}}}}" }} }}
    response: {{ text: $.delta }}
  chat:
    type: rest
    url: "{url}/chat"
    request: {{ body: {{ message: "{{{{message}}}}" }} }}
    response: {{ text: $.reply }}
  chat_read:
    type: rest
    url: "{url}/chat"
    request: {{ body: {{ message: "{{{{message}}}}" }} }}
    response: {{ text: $.answer }}
tests:
  - name: refused
    target: deny
    scenario: {{ max_turns: 2, script: [ {{ say: "hello" }}, {{ say: "refund?" }} ] }}
    assert: [ {{ not_contains: "90 days" }} ]
  - name: refused stream
    target: deny_stream
    scenario: {{ max_turns: 1, script: [ {{ say: "hello" }} ] }}
    assert: [ {{ not_contains: "90 days" }} ]
  - name: refusal expected
    target: deny
    scenario: {{ max_turns: 1, script: [ {{ say: "hello" }} ] }}
    assert: [ {{ status: 401 }} ]
  - name: wrong path
    target: chat
    scenario: {{ max_turns: 1, script: [ {{ say: "hello" }} ] }}
    assert: [ {{ not_contains: "90 days" }} ]
  - name: right path
    target: chat_read
    scenario: {{ max_turns: 1, script: [ {{ say: "hello" }} ] }}
    assert: [ {{ contains: "hi hello" }} ]
"""


@pytest.fixture
async def agent() -> AsyncIterator[str]:
    async def deny(request: web.Request) -> web.Response:
        return web.json_response({"error": "unauthorized", "detail": "token expired"}, status=401)

    async def chat(request: web.Request) -> web.Response:
        return web.json_response({"answer": f"hi {(await request.json())['message']}", "id": 3})

    app = web.Application()
    app.router.add_post("/deny", deny)
    app.router.add_post("/chat", chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


async def run(tmp_path: Path, url: str) -> InvocationResult:
    suite = tmp_path / "shop.yaml"
    suite.write_text(SUITE.format(url=url))
    return await run_async([suite], output=tmp_path / "runs")


@pytest.mark.integration
async def test_an_agent_that_refuses_every_turn_is_an_error_naming_the_status_and_body(
    tmp_path: Path, agent: str
) -> None:
    result = await run(tmp_path, agent)
    by = {t.test_id: t for t in result.tests}
    assert result.exit_code == 3
    (refused,) = by["refused"].runs
    assert (refused.outcome, refused.error_kind, refused.attempt) == ("error", "agent", 1)
    assert refused.error == (
        'the agent refused user turn 1: HTTP 401: {"error": "unauthorized", "detail": "token expired"} '
        "(assert status to test such answers)"
    )
    (stream,) = by["refused stream"].runs
    assert stream.outcome == "error" and stream.error is not None and "HTTP 401" in stream.error
    assert by["refusal expected"].verdict == "passed", "a test that checks status expects refusals"
    assert by["right path"].verdict == "passed"


@pytest.mark.integration
async def test_a_response_path_that_matches_nothing_is_recorded_on_the_turn_and_shown(
    tmp_path: Path, agent: str
) -> None:
    result = await run(tmp_path, agent)
    (wrong,) = next(t for t in result.tests if t.test_id == "wrong path").runs
    note = "response.text $.reply matched nothing; the reply's keys: answer, id"
    assert wrong.outcome == "error" and wrong.error == f"nothing was read from the agent's replies: {note}"
    assert result.run_dir is not None
    transcript = read_transcript(result.run_dir, wrong)
    assert transcript is not None
    assert [t.unread for t in transcript.agent_turns()] == [note]
    assert f"(nothing read: {note})" in render_run(wrong, transcript)
    (right,) = next(t for t in result.tests if t.test_id == "right path").runs
    read = read_transcript(result.run_dir, right)
    assert read is not None and [t.unread for t in read.agent_turns()] == [None]
    out = io.StringIO()
    ConsoleReporter(stream=out, color="never").summary(result)
    assert f"  nothing was read from the agent's replies: {note}" in out.getvalue()


@pytest.mark.unit
def test_an_empty_turn_among_answered_ones_is_not_an_error_but_a_refusal_anywhere_is() -> None:
    class Spec:
        assertions: list[object] = []

    note = "response.text $.reply matched nothing; the reply's keys: answer"
    some = Transcript(
        turns=[Turn(role="agent", index=1, text="hello"), Turn(role="agent", index=2, unread=note)]
    )
    assert unanswered(Spec(), some) is None  # type: ignore[arg-type]
    refused = Transcript(
        turns=[
            Turn(role="agent", index=1, text="hello"),
            Turn(role="agent", index=2, refusal="the call was not answered: 403 Forbidden"),
        ]
    )
    assert unanswered(Spec(), refused) == (  # type: ignore[arg-type]
        "the agent refused user turn 2: the call was not answered: 403 Forbidden (assert status to test such answers)"
    )
