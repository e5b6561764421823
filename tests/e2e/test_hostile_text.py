"""An agent that answers with text no terminal or file format should take raw, through the real CLI.

Lone surrogates (a JSON escape such as ``\\ud800``), NUL, invalid UTF-8 and terminal control
sequences arrive in replies, streamed chunks, websocket messages, tool names and a cases file;
the invocation still ends with its verdicts and every report, the files hold the text escaped,
and nothing the agent sent reaches the console as a control sequence.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from ..stored import stored_lines

pytestmark = pytest.mark.integration

HOSTILE = (
    "lone \ud800 nul \x00 clear \x1b[2J\x1b[H title \x1b]0;owned\x07 "
    "link \x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\ hidden \x1b[8msecret\x1b[0m "
    "bell \x07 csi8 \x9b31m cr \roverwrite"
)
"""Everything here goes out as JSON escapes (json.dumps writes ASCII)."""
TOOL = "lookup\udfff\x1b[2J"

SUITE = """
suite: hostile
targets:
  plain: {{ type: rest, url: "{url}/chat", response: {{ text: $.reply, tool_calls: $.tools }} }}
  sse: {{ type: rest, url: "{url}/stream", streaming: sse, response: {{ text: $.text }} }}
  ws: {{ type: rest, url: "{url}/ws", streaming: websocket, response: {{ text: $.reply, turn_done: $.done }} }}
tests:
  - name: plain
    target: plain
    scenario: {{ max_turns: 1, script: [ {{ say: "hi" }} ] }}
    assert: [ {{ contains: "a reply it never gave" }}, {{ tool_called: lookup }} ]
  - name: streamed
    target: sse
    scenario: {{ max_turns: 1, script: [ {{ say: "hi" }} ] }}
    assert: [ {{ contains: "a reply it never gave" }} ]
  - name: socket
    target: ws
    scenario: {{ max_turns: 1, script: [ {{ say: "hi" }} ] }}
    assert: [ {{ contains: "a reply it never gave" }} ]
  - name: case
    target: plain
    cases_file: cases.json
    scenario: {{ max_turns: 1, script: [ {{ say: "{{{{vars.word}}}}" }} ] }}
    assert: [ {{ contains: "lone" }} ]
"""


@pytest.fixture
async def agent() -> AsyncIterator[str]:
    async def chat(request: web.Request) -> web.Response:
        await request.read()
        body = json.dumps({"reply": HOSTILE + " BROKEN", "tools": [{"name": TOOL, "args": {"q": "\udc80"}}]})
        invalid = body.encode().replace(b"BROKEN", b"\\u0000 \xff\xfe\xed\xa0\x80 (not UTF-8)")
        return web.Response(body=invalid, content_type="application/json")

    async def stream(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for piece in (HOSTILE[:10], HOSTILE[10:40], HOSTILE[40:]):
            await resp.write(f"data: {json.dumps({'text': piece})}\n\n".encode())
        await resp.write(b"data: \xff\xfe not utf-8\n\n")
        await resp.write_eof()
        return resp

    async def ws(request: web.Request) -> web.WebSocketResponse:
        sock = web.WebSocketResponse()
        await sock.prepare(request)
        async for _ in sock:
            await sock.send_str(json.dumps({"reply": HOSTILE, "done": True}))
        return sock

    app = web.Application()
    app.router.add_post("/chat", chat)
    app.router.add_post("/stream", stream)
    app.router.add_get("/ws", ws)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


async def tamesu(cwd: Path, *args: str) -> tuple[int, bytes]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tamesu", *args,
        cwd=cwd, env={**os.environ, "NO_COLOR": "1"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out


def no_control_bytes(out: bytes) -> None:
    text = out.decode("utf-8")  # strict: the console got valid UTF-8
    bad = sorted({hex(ord(c)) for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F})
    assert not bad, f"control characters reached the console: {bad}\n{text}"


async def test_hostile_replies_end_in_verdicts_reports_and_escaped_files(agent: str, tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").write_text(SUITE.format(url=agent))
    (tmp_path / "cases.json").write_text(
        json.dumps([{"name": "evil \ud800\x1b]0;t\x07", "word": "w\x00\x1b[2J\udfff"}]), encoding="utf-8"
    )
    code, out = await tamesu(tmp_path, "run", "suite.yaml", "--json", "out.json", "--junit", "junit.xml")
    text = out.decode("utf-8", "replace")
    assert code == 1, text
    assert "1 passed, 3 failed, 0 errors" in text, text
    no_control_bytes(out)
    assert "\\x1b[2J" in text and "\\ud800" in text, "the agent's control text is shown as escapes"

    report = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert {t["verdict"] for t in report["tests"]} <= {"passed", "failed"}
    ET.parse(tmp_path / "junit.xml")
    run_dir = next((tmp_path / "tamesu-runs").glob("*-hostile-*"))
    lines = (run_dir / "results.jsonl").read_bytes().splitlines()
    assert len(lines) == 4 and all(json.loads(line)["outcome"] in ("passed", "failed") for line in lines)
    stored = {json.loads(line)["run_id"]: line for line in stored_lines(run_dir)}
    assert len(stored) == 4
    plain = json.loads(next(v for k, v in stored.items() if k.startswith("plain")))
    agent_turn = plain["turns"][-1]
    assert agent_turn["text"].startswith("lone \\ud800 nul \x00 clear \x1b[2J")
    assert agent_turn["text"].endswith("\x00 \ufffd\ufffd\ufffd\ufffd\ufffd (not UTF-8)")
    assert agent_turn["tool_calls"][0]["name"] == "lookup\\udfff\x1b[2J"
    assert agent_turn["tool_calls"][0]["args"] == {"q": "\\udc80"}
    for data in stored.values():
        data.decode("utf-8")  # strict: every transcript is valid UTF-8
        assert b"\x1b" not in data, "control characters are stored as JSON escapes"

    code, out = await tamesu(tmp_path, "list", "suite.yaml")
    assert code == 0 and "case [evil \\ud800\\x1b]0;t\\x07]" in out.decode(), out
    no_control_bytes(out)
