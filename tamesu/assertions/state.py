"""State checks: after the conversation, ask your backend (``http``) or a script (``command``).

What the agent said is only half a test; these check what it did. Templates render with the run's
vars, captured values and secrets. A backend that cannot be reached, or a command that does not
finish in time, makes the result an infrastructure error rather than a failure; a wrong status,
body or exit code is a failure. Every message and value passes through the run's redactor.

Values the agent chose never change a command's structure or a URL's shape: the command reads them
as ``$TAMESU_CAPTURED_NAME`` (``render_command``) and a URL carries them percent-encoded
(``render_url``).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from typing import Any

from tamesu.assertions.compare import given, json_equal, redacted, shorten, text_pattern
from tamesu.assertions.evaluation import AssertionContext, assertion
from tamesu.config.assertions.state import StateCommand, StateHTTP
from tamesu.durations import format_duration, parse_duration
from tamesu.errors import TamesuError
from tamesu.kernel.outcome import AssertionResult
from tamesu.templates import agent_env, render, render_command, render_text, render_url

__all__ = ["check_output", "command_state", "http_state"]

DEFAULT_TIMEOUT = 30.0


def _get(spec: Any, key: str, default: Any = None) -> Any:
    value = spec.get(key) if isinstance(spec, dict) else getattr(spec, key, None)
    return default if value is None else value


def _timeout(spec: Any) -> float:
    raw = _get(spec, "timeout")
    return DEFAULT_TIMEOUT if raw is None else parse_duration(str(raw))


def check_output(text: str, *, contains: str | None, regex: str | None, what: str) -> str | None:
    """Why ``text`` fails ``contains`` (case-insensitive, whitespace folded) or ``regex``; None if it passes."""
    if contains is not None and not text_pattern(contains).search(text):
        return f"{what} lacks {contains!r}: {shorten(text) or '(empty)'}"
    if regex is not None and not re.search(regex, text):
        return f"{what} does not match /{regex}/: {shorten(text) or '(empty)'}"
    return None


def _check_json(spec: Any, body: str) -> str | None:
    jp = _get(spec, "json_path")
    if jp is None:
        return None
    from tamesu.jsonpath import find
    from tamesu.untrusted import loads_json

    path = jp["path"] if isinstance(jp, dict) else jp.path
    has_equals = ("equals" in jp) if isinstance(jp, dict) else given(jp, "equals")
    equals = jp.get("equals") if isinstance(jp, dict) else jp.equals
    try:
        data = loads_json(body)
    except ValueError:
        return f"the body is not JSON, so {path} cannot be read: {shorten(body) or '(empty)'}"
    values = find(path, data)
    if not values:
        return f"{path} is not in the body: {shorten(body)}"
    if has_equals and not any(json_equal(equals, v) for v in values):
        shown = values[0] if len(values) == 1 else values
        return f"{path} is {shown!r}, expected {equals!r}"
    return None


@assertion("http", spec=StateHTTP, renders=("url", "method", "headers", "body"))
async def http_state(spec: StateHTTP, ctx: AssertionContext) -> AssertionResult:
    """A request to your backend answers with the expected status and body."""
    try:
        url = render_url(_get(spec, "url"), ctx.scope)
        method = render_text(_get(spec, "method", "GET"), ctx.scope).upper() or "GET"
        headers = {str(k): render_text(v, ctx.scope) for k, v in (_get(spec, "headers") or {}).items()}
        body = render(_get(spec, "body"), ctx.scope)
    except TamesuError as exc:
        return redacted(AssertionResult.failed_to_evaluate(f"http state check: {exc}"), ctx)
    timeout = _timeout(spec)
    content: dict[str, Any] = {}
    if isinstance(body, (dict, list)):
        content["json"] = body
    elif body is not None:
        content["content"] = str(body).encode()
    where = f"{method} {url}"

    client = ctx.http
    own = client is None
    if client is None:
        from tamesu.http import make_client

        client = make_client(timeout=timeout)
    try:
        response = await client.request(method, url, headers=headers, timeout=timeout, **content)
        text = response.text
    except Exception as exc:
        from tamesu.http import describe_http_error

        return redacted(
            AssertionResult.failed_to_evaluate(f"http state check: {describe_http_error(exc, url)}"), ctx
        )
    finally:
        if own:
            await client.aclose()

    want_status = _get(spec, "status")
    expected = {"request": where, "status": want_status if want_status is not None else "< 400"}
    actual = {"status": response.status_code, "body": shorten(text, 400)}
    if want_status is not None and response.status_code != want_status:
        problem: str | None = f"{where} answered {response.status_code}, expected {want_status}"
    elif want_status is None and response.status_code >= 400:
        problem = f"{where} answered {response.status_code}: {shorten(text) or '(empty body)'}"
    else:
        problem = _check_json(spec, text) or check_output(
            text, contains=_get(spec, "contains"), regex=_get(spec, "regex"), what="the body"
        )
    return redacted(
        AssertionResult.of(problem is None, expected=expected, actual=actual, message=problem or ""), ctx
    )


def _env(ctx: AssertionContext, agent: dict[str, str]) -> dict[str, str]:
    """The environment, the run's names, and every value the agent gave (its captures first)."""
    env = dict(os.environ)
    t = ctx.transcript
    env.update(agent_env(ctx.scope, {f"captured.{k}": v for k, v in t.captures.items()}))
    env.update(agent)
    env.update({"TAMESU_SESSION": t.session, "TAMESU_TEST": t.test, "TAMESU_RUN_ID": t.run_id})
    return env


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """Kill the command and everything it started (it runs in its own process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    await proc.wait()


@assertion("command", spec=StateCommand, renders=("run",))
async def command_state(spec: StateCommand, ctx: AssertionContext) -> AssertionResult:
    """A shell command (``sh -c`` in the suite's folder) exits as expected and prints the expected text.

    The command sees TAMESU_SESSION, TAMESU_TEST and TAMESU_RUN_ID besides the environment, and each
    value the agent gave as TAMESU_CAPTURED_NAME (TAMESU_SESSION_NAME, ...).
    """
    try:
        cmd, agent = render_command(_get(spec, "run"), ctx.scope)
    except TamesuError as exc:
        return redacted(AssertionResult.failed_to_evaluate(f"command state check: {exc}"), ctx)
    timeout = _timeout(spec)
    try:
        proc = await asyncio.create_subprocess_exec(
            "sh",
            "-c",
            cmd,
            cwd=str(ctx.suite_dir),
            env=_env(ctx, agent),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return redacted(AssertionResult.failed_to_evaluate(f"cannot start `{cmd}`: {exc}"), ctx)
    try:
        out_b, err_b = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        await _stop(proc)
        return redacted(
            AssertionResult.failed_to_evaluate(f"`{cmd}` did not finish within {format_duration(timeout)}"),
            ctx,
        )
    except asyncio.CancelledError:
        await _stop(proc)
        raise
    out = out_b.decode(errors="replace")
    err = err_b.decode(errors="replace")
    want_exit = _get(spec, "exit", 0)
    expected = {"run": cmd, "exit": want_exit}
    actual = {"exit": proc.returncode, "output": shorten(out, 400)}
    if err.strip():
        actual["stderr"] = shorten(err, 400)
    if proc.returncode != want_exit:
        tail = shorten(err or out) or "(no output)"
        problem: str | None = f"`{cmd}` exited {proc.returncode}, expected {want_exit}: {tail}"
    else:
        problem = check_output(
            out, contains=_get(spec, "contains"), regex=_get(spec, "regex"), what="the output"
        )
    return redacted(
        AssertionResult.of(problem is None, expected=expected, actual=actual, message=problem or ""), ctx
    )
