"""The ``browser`` target: a web page driven in Chromium as a user would.

A run opens a fresh context (its own cookies and storage, the suite's viewport, locale, saved sign-in
and mocks) in the process's shared Chromium and loads ``url``. The agent speaks first: that first
turn runs the test's ``steps`` (each an event; a failed check ends the session and fails the run)
and reads the chat widget's greeting, if the page has one. Each user turn after it is typed into the
page's chat widget and the agent's answer read back from it (``browser_chat``), so a persona, a
script, judges and every text assertion work on a web chat as on any other target.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tamesu.errors import TargetError
from tamesu.kernel.events import (
    BrowserAction,
    BrowserBlocked,
    BrowserDownload,
    BrowserMocked,
    BrowserPopup,
    BrowserRecording,
    BrowserStep,
)
from tamesu.kernel.messages import AgentTurn, Event, Message, UserTurn
from tamesu.targets.base import TargetAdapter, target, turn_text
from tamesu.targets.browser.settings import BrowserTarget

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page

    from tamesu.kernel.outcome import AssertionResult
    from tamesu.targets.base import TargetContext
    from tamesu.targets.browser.browser_chat import ChatWidget
    from tamesu.targets.browser.browser_record import Recorder
    from tamesu.targets.browser.browser_session import Gate
    from tamesu.targets.browser.browser_steps import StepRunner

__all__ = ["BrowserAdapter", "run_folder"]

LOAD_TIMEOUT = 30.0
"""Seconds the first page may take to load."""


@target("browser", config=BrowserTarget)
class BrowserAdapter(TargetAdapter):
    """One run's page in its own browser context; see the module docstring."""

    config: BrowserTarget

    agent_speaks_first = True

    def __init__(self, config: BrowserTarget, ctx: TargetContext) -> None:
        super().__init__(config, ctx)
        self.url = ""
        self.context: BrowserContext | None = None
        self.page: Page | None = None
        self.gate: Gate | None = None
        self.chat: ChatWidget | None = None
        self.runner: StepRunner | None = None
        self._results: list[AssertionResult] = []
        self._notes_sent = 0
        self.recorder: Recorder | None = None
        self.tracing = False
        self.failed = False
        """A turn failed or raised: the trace is kept."""

    def _steps(self) -> list[Any]:
        return list(getattr(self.ctx.test, "steps", None) or [])

    async def start(self) -> None:
        """A new context with the target's options and the gate on every request, then the page."""
        from tamesu.targets.browser.browser_chat import ChatWidget
        from tamesu.targets.browser.browser_session import Gate, domain_allowed, shared_browser
        from tamesu.targets.browser.browser_steps import StepRunner
        from tamesu.targets.browser.settings import BrowserOptions
        from tamesu.templates import render_url

        config, scope = self.config, self.ctx.scope
        scope.set("session", self.ctx.session)
        if not config.url:
            raise TargetError("a browser target needs url", retryable=False, kind="config")
        self.url = render_url(config.url, scope)
        host = urlsplit(self.url).hostname or ""
        domains = list(config.allowed_domains or [host])
        if not domain_allowed(self.url, domains):
            raise TargetError(
                f"the url's domain {host} is not in allowed_domains ({', '.join(domains)})",
                retryable=False,
                kind="config",
            )
        options = config.browser or BrowserOptions()
        kwargs: dict[str, Any] = {"service_workers": "block", "accept_downloads": False}
        if options.viewport:
            width, height = options.viewport.split("x")
            kwargs["viewport"] = {"width": int(width), "height": int(height)}
        if options.locale:
            kwargs["locale"] = options.locale
        if config.auth is not None and config.auth.storage_state:
            kwargs["storage_state"] = str(self._suite_file(config.auth.storage_state))
        browser = await shared_browser()
        self.context = await browser.new_context(**kwargs)
        try:
            self.gate = Gate(domains, mocks=list(options.mocks))
            await self.gate.attach(self.context)
            self.page = await self.context.new_page()
            self.gate.watch(self.context, self.page)
            await self._record(options.recording)
            await self._load()
        except BaseException:
            await self.stop()
            raise
        self.chat = ChatWidget(self.page, max_chars=self.ctx.limits.turn_text)
        self.runner = StepRunner(
            self.page,
            self.gate,
            scope,
            self.url,
            shots_dir=self._run_dir(),
            results=self._results,
            suite_dir=Path(self.ctx.suite_dir),
            update_golden=self.ctx.update_golden,
            models=self.ctx.models,
            ledger=self.ctx.ledger,
            redactor=self.ctx.redactor,
            max_goal_steps=self.ctx.max_goal_steps or 15,
        )

    async def _record(self, setting: str) -> None:
        """Start the screencast and the trace when the run has an output directory."""
        from tamesu.targets.browser.browser_record import Recorder, recording_format

        where = self._run_dir()
        assert self.context is not None and self.page is not None
        if where is None:
            return
        fmt = recording_format(setting)
        if fmt is not None:
            self.recorder = Recorder(fmt, where / f"recording.{fmt}")
            await self.recorder.start(self.context, self.page)
        await self.context.tracing.start(screenshots=True, snapshots=True)
        self.tracing = True

    def _suite_file(self, name: str) -> Path:
        path = Path(name)
        path = path if path.is_absolute() else Path(self.ctx.suite_dir) / path
        if not path.is_file():
            raise TargetError(f"auth.storage_state: no file {path}", retryable=False, kind="config")
        return path

    def _run_dir(self) -> Path | None:
        """Where this run's screenshots, recording and trace go (none without an output directory)."""
        output = self.ctx.output_dir
        if not output:
            return None
        return run_folder(Path(output), self.ctx.run_id)

    async def _load(self) -> None:
        from playwright.async_api import Error as PlaywrightError

        assert self.page is not None
        try:
            response = await self.page.goto(self.url, timeout=LOAD_TIMEOUT * 1000)
        except PlaywrightError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise self.redacted(TargetError(f"the page {self.url} did not load: {first}")) from None
        if response is not None and response.status >= 500:
            raise self.redacted(TargetError(f"the page {self.url} answered {response.status}"))
        self._gate_held(f"the page {self.url}")

    def _gate_held(self, what: str) -> None:
        """A redirect out of the allowed domains (which routing cannot stop) ends the run."""
        escapes = self.gate.take_escapes() if self.gate is not None else []
        if escapes:
            raise self.redacted(
                TargetError(
                    f"{what} led out of the allowed domains to {escapes[0]}; add the domain to "
                    "allowed_domains if the test may go there",
                    retryable=False,
                )
            )

    async def stop(self) -> None:
        """Keep the trace when a step failed or a turn raised, write the recording, close the context."""
        context, self.context = self.context, None
        self.page = None
        if context is None:
            return
        where = self._run_dir()
        try:
            if self.tracing and where is not None:
                self.tracing = False
                failed = self.failed or any(not r.passed for r in self._results)
                await context.tracing.stop(path=where / "trace.zip" if failed else None)
        except Exception:
            pass
        try:
            await context.close()
        except Exception:
            pass
        if self.recorder is not None:
            recorder, self.recorder = self.recorder, None
            await recorder.finish()

    def results(self) -> list[AssertionResult]:
        return list(self._results)

    def _notes(self) -> list[Event]:
        """What the gate blocked or mocked, and the browser agent's actions, since the last turn."""
        if self.gate is None:
            return []
        fresh = self.gate.notes[self._notes_sent :]
        self._notes_sent = len(self.gate.notes)
        now = self.ctx.clock.now()
        out = [Event(event=request_event(name, data, now), at=now) for name, data in fresh]
        if self.runner is not None:
            out += [Event(event=action_event(a, now), at=now) for a in self.runner.actions]
            self.runner.actions.clear()
        return out

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        try:
            async for msg in self._turn(user):
                yield msg
        except (Exception, asyncio.CancelledError):
            self.failed = True
            raise

    async def _turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        from playwright.async_api import Error as PlaywrightError

        from tamesu.targets.browser.browser_steps import StepFailed

        assert self.page is not None and self.chat is not None and self.runner is not None
        clock = self.ctx.clock
        if user is None:
            if self.recorder is not None:
                recording = BrowserRecording(
                    format=self.recorder.fmt, path=str(self.recorder.path), at=clock.now()
                )
                yield Event(event=recording, at=recording.at)
            for index, step in enumerate(self._steps()):
                try:
                    event = await self.runner.run(index, step)
                except StepFailed as failed:
                    for note in self._notes():
                        yield note
                    yield Event(event=step_event(failed.event, clock.now()), at=clock.now())
                    yield AgentTurn(text="", done=True, at=clock.now())
                    return
                except PlaywrightError as exc:
                    raise self.redacted(
                        TargetError(f"the browser failed during step {index + 1}: {exc}")
                    ) from None
                for note in self._notes():
                    yield note
                yield Event(event=step_event(event, clock.now()), at=clock.now())
            try:
                greeting = await self.chat.messages()
            except PlaywrightError:
                greeting = []
            yield AgentTurn(text="\n".join(greeting), at=clock.now())
            return
        text = turn_text(user, "browser")
        try:
            answer = await self.chat.say(text, timeout=self.ctx.turn_timeout)
        except PlaywrightError as exc:
            raise self.redacted(TargetError(f"the chat widget at {self.page.url} failed: {exc}")) from None
        except TargetError as exc:
            raise self.redacted(exc) from None
        for note in self._notes():
            yield note
        self._gate_held("the chat turn")
        yield AgentTurn(text="\n".join(answer), at=clock.now())


def step_event(data: dict[str, Any], at: float) -> BrowserStep:
    """A step's event as the transcript keeps it: what every step has, then what its action found."""
    rest = {k: v for k, v in data.items() if k not in ("step", "action", "passed", "message")}
    return BrowserStep(
        step=int(data.get("step", 0)),
        action=str(data.get("action", "")),
        passed=bool(data.get("passed", True)),
        message=str(data.get("message", "")),
        details=rest,
        at=at,
    )


def action_event(record: dict[str, str], at: float) -> BrowserAction:
    rest = {k: v for k, v in record.items() if k not in ("action", "ok", "error")}
    return BrowserAction(
        action=record.get("action", ""),
        ok=record.get("ok") == "true",
        error=record.get("error"),
        details=rest,
        at=at,
    )


def request_event(
    name: str, data: dict[str, Any], at: float
) -> BrowserBlocked | BrowserMocked | BrowserPopup | BrowserDownload:
    """What the gate noted: a request it blocked or answered from a mock, a popup, a download."""
    url, method = str(data.get("url", "")), str(data.get("method", "GET"))
    if name == "browser_popup":
        return BrowserPopup(url=url, at=at)
    if name == "browser_download":
        return BrowserDownload(url=url, filename=str(data.get("filename", "")), at=at)
    if name == "browser_mocked":
        return BrowserMocked(url=url, method=method, pattern=str(data.get("pattern", "")), at=at)
    previous = data.get("redirected_from")
    return BrowserBlocked(url=url, method=method, redirected_from=str(previous) if previous else None, at=at)


def run_folder(output: Path, run_id: str) -> Path:
    """``output/browser/NAME-HASH``: a run id may hold anything (``a/b``, ``a?b``, ``..``), and
    two ids never share a folder nor leave ``browser/`` (the hash is of the whole id)."""
    from tamesu.untrusted import safe_name

    return output / "browser" / safe_name(run_id, limit=100)
