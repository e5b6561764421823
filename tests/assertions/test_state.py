from __future__ import annotations

import asyncio
import json
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from tamesu.secrets import Redactor, SecretStore
from tamesu.templates import Scope

from .builders import convo
from .conftest import Check

pytestmark = pytest.mark.integration

TOKEN = "s3cr3t-admin-token"
RUN = convo("agent: Your refund is on its way", captures={"order_id": "ORD-1"}, session="sess-42")


async def _order(request: web.Request) -> web.Response:
    if request.headers.get("Authorization") != f"Bearer {TOKEN}":
        return web.json_response({"error": "forbidden"}, status=403)
    order = request.match_info["id"]
    if order != "ORD-1":
        return web.json_response({"error": "no such order"}, status=404)
    return web.json_response(
        {"id": order, "status": "refunded", "amount": 40, "events": [{"type": "refund_issued"}]}
    )


async def _echo(request: web.Request) -> web.Response:
    body = await request.text()
    parsed = json.loads(body) if request.content_type == "application/json" else None
    echoed = {
        "method": request.method,
        "body": body,
        "json": parsed,
        "auth": request.headers.get("Authorization"),
    }
    return web.Response(text=json.dumps(echoed))


async def _seen(request: web.Request) -> web.Response:
    return web.json_response({"path": request.raw_path.split("?")[0], "q": request.query.getall("q")})


async def _plain(request: web.Request) -> web.Response:
    return web.Response(text="ledger: ORD-1 credited\n")


@pytest.fixture
async def admin_url() -> AsyncIterator[str]:
    release = asyncio.Event()

    async def _stuck(request: web.Request) -> web.Response:
        await release.wait()
        return web.Response(text="too late")

    app = web.Application()
    app.router.add_get("/stuck", _stuck)
    app.router.add_get("/orders/{id}", _order)
    app.router.add_route("*", "/echo", _echo)
    app.router.add_get("/plain", _plain)
    app.router.add_get("/seen/{tail:.*}", _seen)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}"
    release.set()
    await runner.cleanup()


@pytest.fixture
def redactor() -> Redactor:
    return Redactor()


@pytest.fixture
def scope(admin_url: str, redactor: Redactor, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Scope:
    monkeypatch.setenv("ADMIN_TOKEN", TOKEN)
    store = SecretStore({"ADMIN_TOKEN": "env:ADMIN_TOKEN"}, redactor=redactor, base_dir=tmp_path)
    return Scope(
        {"vars": {"admin_url": admin_url}, "captured": {"order_id": "ORD-1"}},
        resolvers={"secrets": store.get},
    )


ORDER = {
    "url": "{{vars.admin_url}}/orders/{{captured.order_id}}",
    "headers": {"Authorization": "Bearer {{secrets.ADMIN_TOKEN}}"},
}


async def test_http_json_path_equals(check: Check, scope: Scope, redactor: Redactor) -> None:
    item = {"http": {**ORDER, "json_path": {"path": "$.status", "equals": "refunded"}}}
    result = await check(item, RUN, scope=scope, redactor=redactor)
    assert result.passed, result.message
    assert result.actual["status"] == 200
    wrong = await check(
        {"http": {**ORDER, "json_path": {"path": "$.amount", "equals": 50}}},
        RUN,
        scope=scope,
        redactor=redactor,
    )
    assert not wrong.passed and not wrong.error and wrong.message == "$.amount is 40, expected 50"


async def test_http_status_default_and_explicit(check: Check, scope: Scope) -> None:
    missing = {"url": "{{vars.admin_url}}/orders/ORD-9", "headers": ORDER["headers"]}
    default = await check({"http": missing}, RUN, scope=scope)
    assert not default.passed and not default.error and "answered 404" in default.message
    assert (await check({"http": {**missing, "status": 404}}, RUN, scope=scope)).passed
    wrong = await check({"http": {**ORDER, "status": 201}}, RUN, scope=scope)
    assert not wrong.passed and "answered 200, expected 201" in wrong.message


async def test_http_contains_and_regex(check: Check, scope: Scope) -> None:
    assert (await check({"http": {**ORDER, "contains": "REFUNDED"}}, RUN, scope=scope)).passed
    assert (await check({"http": {**ORDER, "regex": '"type": ?"refund_issued"'}}, RUN, scope=scope)).passed
    lacking = await check({"http": {**ORDER, "contains": "cancelled"}}, RUN, scope=scope)
    assert not lacking.passed and "the body lacks 'cancelled'" in lacking.message
    nomatch = await check({"http": {**ORDER, "regex": "^cancel"}}, RUN, scope=scope)
    assert not nomatch.passed and "does not match" in nomatch.message


async def test_http_json_path_on_a_text_body_fails(check: Check, scope: Scope) -> None:
    result = await check(
        {"http": {"url": "{{vars.admin_url}}/plain", "json_path": {"path": "$.x"}}}, RUN, scope=scope
    )
    assert not result.passed and "not JSON" in result.message


async def test_http_body_mapping_as_json_and_string_as_is(check: Check, scope: Scope) -> None:
    mapping = {"url": "{{vars.admin_url}}/echo", "method": "post", "body": {"order": "{{captured.order_id}}"}}
    sent = await check(
        {"http": {**mapping, "json_path": {"path": "$.json.order", "equals": "ORD-1"}}}, RUN, scope=scope
    )
    assert sent.passed, sent.message
    assert (await check({"http": {**mapping, "contains": '"method": "POST"'}}, RUN, scope=scope)).passed
    text = {"url": "{{vars.admin_url}}/echo", "method": "PUT", "body": "id={{captured.order_id}}"}
    as_is = await check(
        {"http": {**text, "json_path": {"path": "$.body", "equals": "id=ORD-1"}}}, RUN, scope=scope
    )
    assert as_is.passed, as_is.message


async def test_http_unreachable_is_an_error_and_hides_secrets(
    check: Check, scope: Scope, redactor: Redactor
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    item = {
        "http": {"url": f"http://127.0.0.1:{port}/orders?key={{{{secrets.ADMIN_TOKEN}}}}", "timeout": "5s"}
    }
    result = await check(item, RUN, scope=scope, redactor=redactor)
    assert result.error and not result.passed
    assert TOKEN not in result.message and "***" in result.message


@pytest.mark.parametrize("shared", [False, True])
async def test_http_timeout_is_an_error(check: Check, scope: Scope, shared: bool) -> None:
    from tamesu.http import make_client

    client = make_client() if shared else None
    try:
        item = {"http": {"url": "{{vars.admin_url}}/stuck", "timeout": "200ms"}}
        result = await check(item, RUN, scope=scope, http=client)
    finally:
        if client is not None:
            await client.aclose()
    assert result.error and "timed out" in result.message


async def test_http_secret_values_never_show(check: Check, scope: Scope, redactor: Redactor) -> None:
    item = {
        "http": {
            "url": "{{vars.admin_url}}/echo",
            "headers": ORDER["headers"],
            "contains": "nothing like this",
        }
    }
    result = await check(item, RUN, scope=scope, redactor=redactor)
    assert not result.passed
    assert TOKEN not in result.message and TOKEN not in json.dumps(result.actual)
    assert "Bearer ***" in result.message


async def test_http_unknown_template_is_an_error(check: Check, scope: Scope) -> None:
    result = await check({"http": {"url": "{{vars.nope}}/x"}}, RUN, scope=scope)
    assert result.error and "vars.nope" in result.message


async def test_command_exit_and_output(check: Check, scope: Scope, tmp_path: Path) -> None:
    (tmp_path / "ledger.txt").write_text("ORD-1 credited\n")
    assert (
        await check(
            {"command": {"run": "grep {{captured.order_id}} ledger.txt", "contains": "CREDITED"}},
            RUN,
            scope=scope,
        )
    ).passed
    assert (
        await check({"command": {"run": "cat ledger.txt", "regex": r"ORD-\d+ cred"}}, RUN, scope=scope)
    ).passed
    missing = await check({"command": {"run": "grep ORD-9 ledger.txt"}}, RUN, scope=scope)
    assert not missing.passed and not missing.error and "exited 1, expected 0" in missing.message
    assert (await check({"command": {"run": "grep ORD-9 ledger.txt", "exit": 1}}, RUN, scope=scope)).passed
    lacking = await check({"command": {"run": "cat ledger.txt", "contains": "debited"}}, RUN, scope=scope)
    assert not lacking.passed and "the output lacks 'debited'" in lacking.message
    nomatch = await check({"command": {"run": "cat ledger.txt", "regex": "^debit"}}, RUN, scope=scope)
    assert not nomatch.passed and "does not match" in nomatch.message


async def test_command_sees_the_run(check: Check, scope: Scope) -> None:
    result = await check(
        {"command": {"run": 'echo "$TAMESU_SESSION"', "contains": "sess-42"}}, RUN, scope=scope
    )
    assert result.passed, result.message


async def test_command_shows_stderr_on_failure(check: Check, scope: Scope) -> None:
    result = await check({"command": {"run": "echo boom >&2; exit 3"}}, RUN, scope=scope)
    assert not result.passed and "exited 3" in result.message and "boom" in result.message
    assert result.actual["stderr"] == "boom"


async def test_command_timeout_is_an_error_and_kills_it(check: Check, scope: Scope, tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    run = f"sleep 5; touch {marker}"
    result = await check({"command": {"run": run, "timeout": "200ms"}}, RUN, scope=scope)
    assert result.error and "did not finish within 200ms" in result.message
    assert not marker.exists()


async def test_command_redacts_secrets(check: Check, scope: Scope, redactor: Redactor) -> None:
    item = {"command": {"run": "echo token={{secrets.ADMIN_TOKEN}}", "contains": "nope"}}
    result = await check(item, RUN, scope=scope, redactor=redactor)
    assert not result.passed
    assert TOKEN not in result.message and TOKEN not in json.dumps([result.expected, result.actual])
    assert "token=***" in result.actual["output"]


@pytest.mark.skipif(sys.platform == "win32", reason="sh -c")
async def test_command_runs_in_the_suite_folder(check: Check, scope: Scope, tmp_path: Path) -> None:
    sub = tmp_path / "suite"
    sub.mkdir()
    result = await check({"command": {"run": "pwd", "contains": str(sub)}}, RUN, scope=scope, suite_dir=sub)
    assert result.passed, result.message


HOSTILE = [
    "ORD-1; touch {marker}",
    "$(touch {marker})",
    "`touch {marker}`",
    "x' ; touch {marker}; echo '",
    'x" ; touch {marker}; echo "',
    "ORD-1\ntouch {marker}",
    "ORD-1 && touch {marker}",
]


@pytest.mark.parametrize(
    "template", ["echo {{captured.order_id}}", "echo '{{captured.order_id}}'", 'echo "{{captured.order_id}}"']
)
@pytest.mark.parametrize("hostile", HOSTILE)
async def test_an_agent_value_with_shell_syntax_is_refused_not_run(
    check: Check, tmp_path: Path, template: str, hostile: str
) -> None:
    marker = tmp_path / "pwned"
    value = hostile.format(marker=marker)
    agent = Scope({"captured": {"order_id": value}})
    result = await check(
        {"command": {"run": template}}, convo("agent: hi", captures={"order_id": value}), scope=agent
    )
    assert result.error and not result.passed
    assert "came from the agent" in result.message and '"$TAMESU_CAPTURED_ORDER_ID"' in result.message
    assert not marker.exists()


async def test_a_command_reads_agent_values_from_its_environment(check: Check, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    value = f"ORD-1; touch {marker}"
    agent = Scope({"captured": {"order_id": value}, "session.token": "t k"})
    run = convo("agent: hi", captures={"order_id": value, "refund": "$(touch x)"})
    result = await check(
        {
            "command": {
                "run": 'printf "%s|%s|%s" "$TAMESU_CAPTURED_ORDER_ID" "$TAMESU_CAPTURED_REFUND" "$TAMESU_SESSION_TOKEN"'
            }
        },
        run,
        scope=agent,
    )
    assert result.passed, result.message
    assert result.actual["output"] == f"{value}|$(touch x)|t k"
    assert not marker.exists() and not (tmp_path / "x").exists()


async def test_an_agent_value_without_shell_syntax_is_still_spliced(check: Check) -> None:
    agent = Scope({"captured": {"order_id": "ORD-123"}})
    result = await check(
        {"command": {"run": "echo id={{captured.order_id}}", "contains": "id=ORD-123"}}, RUN, scope=agent
    )
    assert result.passed, result.message


async def test_an_agent_value_is_percent_encoded_into_the_url(check: Check, scope: Scope) -> None:
    hostile = Scope({"captured": {"order_id": "ORD-1/../../admin?all=1#x"}}, parent=scope)
    item = {"http": {"url": "{{vars.admin_url}}/seen/{{captured.order_id}}?q={{captured.order_id}}&v=1"}}
    result = await check(item, RUN, scope=hostile)
    assert result.passed, result.message
    seen = json.loads(result.actual["body"])
    assert seen["path"] == "/seen/ORD-1%2F..%2F..%2Fadmin%3Fall=1%23x"
    assert seen["q"] == ["ORD-1/../../admin?all=1#x"]
    up = await check(item, RUN, scope=Scope({"captured": {"order_id": ".."}}, parent=scope))
    assert up.error and "move up the URL's path" in up.message
