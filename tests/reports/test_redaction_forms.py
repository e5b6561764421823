"""A secret an agent streams back in pieces, or encoded, is redacted in every stored raw event too.

The agent gets the secret in a header and sends it back split across server-sent events and
websocket messages (each event carrying other fields as real streams do), base64-encoded inside
a longer credential, and URL-encoded in a link.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from aiohttp import web

from tamesu import run_async
from tamesu.secrets import Redactor

from ..stored import stored_lines

pytestmark = pytest.mark.integration

SECRET = "sk-live/9f8e+7d6c=5b4a"
PIECES = ["your key: sk-li", "ve/9f", "8e+7d6", "c=5b4a. Keep it safe."]

SUITE = """
suite: leaky
secrets: {{ TOKEN: env:TAMESU_TEST_LEAKY_TOKEN }}
targets:
  sse:
    type: rest
    url: "{url}/stream"
    streaming: sse
    headers: {{ Authorization: "Bearer {{{{secrets.TOKEN}}}}" }}
    response: {{ text: $.delta }}
  ws:
    type: rest
    url: "{url}/ws"
    streaming: websocket
    headers: {{ Authorization: "Bearer {{{{secrets.TOKEN}}}}" }}
    response: {{ text: $.delta, turn_done: $.done }}
tests:
  - name: streamed
    target: sse
    scenario: {{ max_turns: 1, script: [ {{ say: "my key?" }} ] }}
    assert: [ {{ contains: "keep it safe" }} ]
  - name: socket
    target: ws
    scenario: {{ max_turns: 1, script: [ {{ say: "my key?" }} ] }}
    assert: [ {{ contains: "keep it safe" }} ]
"""


def events(secret: str) -> list[dict[str, object]]:
    """The reply in pieces, then the secret encoded in fields the response paths do not read."""
    basic = base64.b64encode(f"agent:{secret}".encode()).decode()
    out: list[dict[str, object]] = [
        {"type": "response.output_text.delta", "event_id": f"ev_{n}", "item_id": "item_1", "delta": piece}
        for n, piece in enumerate(PIECES)
    ]
    out.append(
        {
            "type": "debug",
            "basic": f"Basic {basic}",
            "link": f"https://cb.example/?t={quote(secret, safe='')}",
        }
    )
    out.append(
        {
            "type": "debug",
            "form": f"token={quote_plus(secret)}",
            "b64url": base64.urlsafe_b64encode(secret.encode()).decode(),
        }
    )
    return out


@pytest.fixture
async def leaky() -> AsyncIterator[str]:
    async def stream(request: web.Request) -> web.StreamResponse:
        await request.read()
        secret = request.headers["Authorization"].removeprefix("Bearer ")
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for event in events(secret):
            await resp.write(f"data: {json.dumps(event)}\n\n".encode())
        await resp.write_eof()
        return resp

    async def ws(request: web.Request) -> web.WebSocketResponse:
        secret = request.headers["Authorization"].removeprefix("Bearer ")
        sock = web.WebSocketResponse()
        await sock.prepare(request)
        async for _ in sock:
            for event in events(secret):
                await sock.send_str(json.dumps(event))
            await sock.send_str(json.dumps({"type": "done", "done": True}))
        return sock

    app = web.Application()
    app.router.add_post("/stream", stream)
    app.router.add_get("/ws", ws)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


async def test_split_and_encoded_secrets_are_redacted_in_stored_raw_events(
    leaky: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAMESU_TEST_LEAKY_TOKEN", SECRET)
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.format(url=leaky))
    result = await run_async([suite], redactor=Redactor(), output=tmp_path / "runs")
    assert result.exit_code == 0, [r.error or r.assertions for r in result.results]
    stored = [line.decode("utf-8") for line in stored_lines(result.run_dir)]  # type: ignore[arg-type]
    assert len(stored) == 2
    secret_forms = {
        "the secret": SECRET,
        "base64 inside a longer credential": base64.b64encode(f"agent:{SECRET}".encode()).decode()[8:30],
        "URL-safe base64": base64.urlsafe_b64encode(SECRET.encode()).decode()[:20],
        "URL-encoded": quote(SECRET, safe=""),
        "form-encoded": quote_plus(SECRET),
    }
    for text in stored:
        transcript = json.loads(text)
        (agent,) = [t for t in transcript["turns"] if t["role"] == "agent"]
        assert agent["text"] == "your key: ***. Keep it safe."
        deltas = [e["delta"] for e in agent["raw"] if isinstance(e, dict) and "delta" in e]
        assert deltas == ["your key: ***", "***", "***", "***. Keep it safe."]
        for what, form in secret_forms.items():
            assert form not in text, f"{what} is stored: {form}"
        for piece in ("sk-li", "ve/9f", "8e+7d6", "c=5b4a"):
            assert piece not in text, f"a piece of the secret is stored: {piece}"
