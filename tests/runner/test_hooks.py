from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tamesu.config import Hook, Hooks
from tamesu.runner.hooks import collect_hooks, hook_env, run_hook, run_hooks
from tamesu.secrets import Redactor
from tamesu.templates import Scope

ENV = hook_env(suite="support", test="refund [late]", session="sess-42", run_id="refund [late]#2")


def scope(**values: Any) -> Scope:
    return Scope({"vars": {"admin": "adm"}, **values})


@pytest.mark.unit
def test_hook_env_names_the_suite_test_session_and_run() -> None:
    assert hook_env(suite="s") == {"TAMESU_SUITE": "s"}
    assert ENV == {
        "TAMESU_SUITE": "support",
        "TAMESU_TEST": "refund [late]",
        "TAMESU_SESSION": "sess-42",
        "TAMESU_RUN_ID": "refund [late]#2",
    }


@pytest.mark.unit
def test_collect_hooks_runs_project_setup_first_and_its_teardown_last() -> None:
    project = type(
        "P", (), {"hooks": Hooks(before_all=[Hook(command="p1")], after_all=[Hook(command="p2")])}
    )()
    suite = type("S", (), {"hooks": Hooks(before_all=[Hook(command="s1")], after_all=[Hook(command="s2")])})()
    assert [h.command for h in collect_hooks("before_all", project, suite)] == ["p1", "s1"]
    assert [h.command for h in collect_hooks("after_all", project, suite)] == ["s2", "p2"]
    assert collect_hooks("before_each", None, suite) == []


@pytest.mark.integration
async def test_command_runs_in_the_suite_folder_and_sees_the_env(tmp_path: Path) -> None:
    hook = Hook(
        command='printf "%s|%s|%s|%s|{{vars.admin}}" "$TAMESU_SUITE" "$TAMESU_TEST" "$TAMESU_SESSION" "$TAMESU_RUN_ID" > out.txt'
    )
    outcome = await run_hook(hook, scope=scope(), env=ENV, suite_dir=tmp_path, redactor=Redactor())
    assert outcome.ok, outcome.message
    assert (tmp_path / "out.txt").read_text() == "support|refund [late]|sess-42|refund [late]#2|adm"
    assert outcome.duration > 0


@pytest.mark.integration
async def test_failing_command_reports_status_and_redacted_stderr_tail(tmp_path: Path) -> None:
    redactor = Redactor()
    redactor.add("hunter2-secret")
    lines = "; ".join(f"echo line{i} >&2" for i in range(15))
    hook = Hook(command=f"{lines}; echo 'token hunter2-secret refused' >&2; exit 3")
    outcome = await run_hook(hook, scope=scope(), env=ENV, suite_dir=tmp_path, redactor=redactor)
    assert not outcome.ok
    assert outcome.message.startswith("exited with status 3: ")
    assert "token *** refused" in outcome.message
    assert "hunter2" not in outcome.message
    assert "line14" in outcome.message and "line0\n" not in outcome.message


@pytest.mark.integration
async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    hook = Hook(command="sleep 30 & echo $! > sleeper.pid; wait", timeout="300ms")
    started = time.monotonic()
    outcome = await run_hook(hook, scope=scope(), env=ENV, suite_dir=tmp_path, redactor=Redactor())
    assert time.monotonic() - started < 10
    assert not outcome.ok and "timed out after 300ms" in outcome.message
    pid = int((tmp_path / "sleeper.pid").read_text())
    assert _dead_within(pid, seconds=5)


@pytest.mark.integration
async def test_background_process_does_not_hold_the_hook(tmp_path: Path) -> None:
    hook = Hook(command="sleep 30 > /dev/null 2>&1 & echo $! > bg.pid; echo started", timeout="10s")
    try:
        outcome = await run_hook(hook, scope=scope(), env=ENV, suite_dir=tmp_path, redactor=Redactor())
        assert outcome.ok and outcome.duration < 5
    finally:
        os.kill(int((tmp_path / "bg.pid").read_text()), 9)


def _dead_within(pid: int, *, seconds: float) -> bool:
    """Whether ``pid`` is gone or a zombie, checked until a deadline (the kernel delivers SIGKILL
    asynchronously and the orphan is reaped by init)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


@pytest.fixture
async def admin_server() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []
    release = asyncio.Event()

    async def handle(request: web.Request) -> web.Response:
        seen.append(
            {
                "method": request.method,
                "path": request.path,
                "raw": request.raw_path,
                "headers": dict(request.headers),
                "body": await request.text(),
            }
        )
        if request.path == "/hang":
            await release.wait()
        if request.path == "/broken":
            return web.Response(status=500, text="database is down for key hunter2-secret")
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", seen
    release.set()
    await runner.cleanup()


@pytest.mark.integration
async def test_http_hook_renders_url_headers_and_json_body(
    admin_server: tuple[str, list[dict[str, Any]]],
) -> None:
    base, seen = admin_server
    s = Scope({"vars": {"admin_url": base}}, resolvers={"secrets": {"ADMIN_TOKEN": "tok-123456"}.__getitem__})
    hook = Hook.model_validate(
        {
            "http": {
                "url": "{{vars.admin_url}}/reset/{{env.TAMESU_SESSION}}",
                "method": "put",
                "headers": {"Authorization": "Bearer {{secrets.ADMIN_TOKEN}}"},
                "body": {"suite": "{{env.TAMESU_SUITE}}", "n": 2},
            }
        }
    )
    outcome = await run_hook(hook, scope=s, env=ENV, suite_dir=".", redactor=Redactor())
    assert outcome.ok, outcome.message
    [req] = seen
    assert req["method"] == "PUT" and req["path"] == "/reset/sess-42"
    assert req["headers"]["Authorization"] == "Bearer tok-123456"
    assert req["headers"]["Content-Type"] == "application/json"
    assert json.loads(req["body"]) == {"suite": "support", "n": 2}


@pytest.mark.integration
async def test_http_hook_sends_a_string_body_as_is(admin_server: tuple[str, list[dict[str, Any]]]) -> None:
    base, seen = admin_server
    hook = Hook.model_validate({"http": {"url": f"{base}/seed", "body": "reset {{vars.admin}}"}})
    outcome = await run_hook(hook, scope=scope(), env=ENV, suite_dir=".", redactor=Redactor())
    assert outcome.ok
    assert seen[0]["method"] == "POST" and seen[0]["body"] == "reset adm"


@pytest.mark.integration
async def test_http_hook_fails_on_500_with_redacted_body(
    admin_server: tuple[str, list[dict[str, Any]]],
) -> None:
    base, _ = admin_server
    redactor = Redactor()
    redactor.add("hunter2-secret")
    hook = Hook.model_validate({"http": {"url": f"{base}/broken"}})
    outcome = await run_hook(hook, scope=scope(), env=ENV, suite_dir=".", redactor=redactor)
    assert not outcome.ok
    assert outcome.message == "answered 500: database is down for key ***"


@pytest.mark.integration
async def test_http_hook_times_out(admin_server: tuple[str, list[dict[str, Any]]]) -> None:
    base, seen = admin_server
    hook = Hook.model_validate({"http": {"url": f"{base}/hang"}, "timeout": "200ms"})
    outcome = await run_hook(hook, scope=scope(), env=ENV, suite_dir=".", redactor=Redactor())
    assert not outcome.ok and outcome.message == "timed out after 200ms"
    assert seen[0]["path"] == "/hang" and outcome.duration < 5


@pytest.mark.integration
async def test_http_hook_fails_when_nothing_listens() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    hook = Hook.model_validate({"http": {"url": f"http://127.0.0.1:{port}/x"}, "timeout": "5s"})
    outcome = await run_hook(hook, scope=scope(), env=ENV, suite_dir=".", redactor=Redactor())
    assert not outcome.ok and outcome.message == f"connection refused at http://127.0.0.1:{port}/x"


@pytest.mark.integration
async def test_run_hooks_stops_at_the_first_failure(tmp_path: Path) -> None:
    hooks = [Hook(command="touch one"), Hook(command="exit 7"), Hook(command="touch three")]
    outcome = await run_hooks(hooks, scope=scope(), env=ENV, suite_dir=tmp_path, redactor=Redactor())
    assert not outcome.ok and "status 7" in outcome.message
    assert outcome.hook == "command exit 7"
    assert (tmp_path / "one").exists() and not (tmp_path / "three").exists()
    with pytest.raises(Exception, match="hook command exit 7 failed"):
        outcome.raise_for_failure()
    ok = await run_hooks(hooks[:1], scope=scope(), env=ENV, suite_dir=tmp_path, redactor=Redactor())
    assert ok.ok


@pytest.mark.unit
async def test_a_template_that_cannot_render_fails_the_hook(tmp_path: Path) -> None:
    hook = Hook(command="echo {{vars.missing}}")
    outcome = await run_hook(hook, scope=scope(), env=ENV, suite_dir=tmp_path, redactor=Redactor())
    assert not outcome.ok and outcome.hook == "command"
    assert outcome.message.startswith("TemplateError: {{vars.missing}} is not available here")


@pytest.mark.integration
async def test_an_agent_value_with_shell_syntax_never_runs_in_a_hook(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    agent = scope(captured={"order_id": f"ORD-1; touch {marker}"})
    spliced = await run_hook(
        Hook(command="echo {{captured.order_id}}"),
        scope=agent,
        env=ENV,
        suite_dir=tmp_path,
        redactor=Redactor(),
    )
    assert not spliced.ok and "$TAMESU_CAPTURED_ORDER_ID" in spliced.message
    read = Hook(command='printf %s "$TAMESU_CAPTURED_ORDER_ID" > out.txt')
    outcome = await run_hook(read, scope=agent, env=ENV, suite_dir=tmp_path, redactor=Redactor())
    assert outcome.ok, outcome.message
    assert (tmp_path / "out.txt").read_text() == f"ORD-1; touch {marker}"
    assert not marker.exists()


@pytest.mark.integration
async def test_an_agent_value_is_one_encoded_segment_of_an_http_hook_url(
    admin_server: tuple[str, list[dict[str, Any]]],
) -> None:
    base, seen = admin_server
    s = Scope({"vars": {"admin_url": base}, "session.user": "u1/../../admin?drop=1#x"})
    hook = Hook.model_validate({"http": {"url": "{{vars.admin_url}}/users/{{session.user}}?v=1"}})
    outcome = await run_hook(hook, scope=s, env=ENV, suite_dir=".", redactor=Redactor())
    assert outcome.ok, outcome.message
    [req] = seen
    assert req["raw"] == "/users/u1%2F..%2F..%2Fadmin%3Fdrop=1%23x?v=1"
