"""Running one hook: a shell command or an HTTP request, bounded in time, its failure a value.

The scheduler's setup and teardown hooks (``tamesu.runner.hooks``) and a sip target's inbound
``trigger`` run through here. Output is kept in temporary files rather than pipes, so a command
that starts a server in the background returns as soon as its shell exits instead of waiting for
the server to close its output; a command's agent values reach it through the environment only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.durations import format_duration, parse_duration
from tamesu.errors import HookError
from tamesu.templates import render, render_command, render_text, render_url

if TYPE_CHECKING:
    import httpx

    from tamesu.config import Hook, HTTPTrigger
    from tamesu.secrets import Redactor
    from tamesu.templates import Scope

__all__ = ["DEFAULT_HOOK_TIMEOUT", "HookOutcome", "run_hook"]

DEFAULT_HOOK_TIMEOUT = 60.0
_TAIL_LINES = 10
_KILL_GRACE = 2.0


@dataclass
class HookOutcome:
    ok: bool
    message: str = ""
    """Why it failed (redacted), or a short note of what ran."""
    duration: float = 0.0
    hook: str = ""
    """What ran, for logs: ``command ./seed.sh`` or ``http POST https://...``."""

    def raise_for_failure(self) -> None:
        if not self.ok:
            raise HookError(f"hook {self.hook} failed: {self.message}")


async def run_hook(
    hook: Hook,
    *,
    scope: Scope,
    env: Mapping[str, str],
    suite_dir: Path | str,
    http: httpx.AsyncClient | None = None,
    redactor: Redactor,
) -> HookOutcome:
    """Run one hook (a command or a request); never raises."""
    started = time.monotonic()
    timeout = parse_duration(hook.timeout) if getattr(hook, "timeout", None) else DEFAULT_HOOK_TIMEOUT
    hook_scope = scope.child({f"env.{k}": v for k, v in env.items()})
    label = "command" if hook.command else "http"
    try:
        if hook.command:
            outcome = await _run_command(hook.command, hook_scope, env, Path(suite_dir), timeout, redactor)
        elif hook.http:
            outcome = await _run_http(hook.http, hook_scope, http, timeout, redactor)
        else:
            outcome = HookOutcome(False, "the hook has neither command nor http", hook="(empty)")
    except Exception as exc:
        outcome = HookOutcome(False, redactor.redact(f"{type(exc).__name__}: {exc}"), hook=label)
    outcome.duration = time.monotonic() - started
    return outcome


async def _run_command(
    command: str, scope: Scope, env: Mapping[str, str], cwd: Path, timeout: float, redactor: Redactor
) -> HookOutcome:
    text, agent = render_command(command, scope)
    label = redactor.redact(f"command {text}")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = await asyncio.create_subprocess_exec(
            "sh",
            "-c",
            text,
            cwd=cwd,
            env={**os.environ, **agent, **env},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        try:
            code = await asyncio.wait_for(proc.wait(), timeout)
        except asyncio.TimeoutError:
            await _kill_group(proc)
            return HookOutcome(False, f"timed out after {format_duration(timeout)} (killed)", hook=label)
        except asyncio.CancelledError:
            await _kill_group(proc)
            raise
        if code == 0:
            return HookOutcome(True, hook=label)
        tail = _tail(err) or _tail(out)
        detail = f": {redactor.redact(tail)}" if tail else ""
        return HookOutcome(False, f"exited with status {code}{detail}", hook=label)


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the hook's whole process group, then SIGKILL whatever of it is left after a grace."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(proc.wait(), _KILL_GRACE)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    await proc.wait()


def _tail(f: Any) -> str:
    f.seek(0)
    text = f.read().decode("utf-8", "replace")
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-_TAIL_LINES:])


async def _run_http(
    trigger: HTTPTrigger, scope: Scope, http: httpx.AsyncClient | None, timeout: float, redactor: Redactor
) -> HookOutcome:
    import httpx

    from tamesu.http import describe_http_error, is_timeout, make_client

    method = (trigger.method or "POST").upper()
    url = render_url(trigger.url, scope)
    label = redactor.redact(f"http {method} {url}")
    headers = {k: render_text(v, scope) for k, v in (trigger.headers or {}).items()}
    body: dict[str, Any] = {}
    if trigger.body is not None:
        rendered = render(trigger.body, scope)
        if isinstance(rendered, str):
            body["content"] = rendered.encode()
        else:
            body["json"] = rendered
    client = http if http is not None else make_client()
    try:
        response = await client.request(method, url, headers=headers, timeout=timeout, **body)
    except httpx.HTTPError as exc:
        why = (
            f"timed out after {format_duration(timeout)}"
            if is_timeout(exc)
            else describe_http_error(exc, url)
        )
        return HookOutcome(False, redactor.redact(why), hook=label)
    finally:
        if http is None:
            await client.aclose()
    if response.status_code >= 400:
        snippet = response.text.strip()[:300]
        detail = f": {redactor.redact(snippet)}" if snippet else ""
        return HookOutcome(False, f"answered {response.status_code}{detail}", hook=label)
    return HookOutcome(True, f"answered {response.status_code}", hook=label)
