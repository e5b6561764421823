"""The deterministic steps of a browser test, each one an event in the transcript.

A step does one thing to the page (navigate, click, fill, press, wait, screenshot, eval_js, mock)
or checks one thing about it (assert_url, assert_text). A check that does not hold, and an action
the page does not allow (no such element, a navigation outside the allowed domains), is a failed
assertion of the run: the page under test misbehaved, tamesu did not. The steps stop at the first
failure, since the ones after it assume a page that is not there.

The element of a step (``ref``) is a Playwright selector: CSS (``#email``), ``text=Sign in`` or
``role=button[name="Add to cart"]``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from tamesu.durations import parse_duration
from tamesu.environment import unsupported_step
from tamesu.errors import TargetError
from tamesu.targets.browser.browser_session import Gate, domain_allowed, url_matches
from tamesu.templates import render

if TYPE_CHECKING:
    from playwright.async_api import Page

    from tamesu.kernel.outcome import AssertionResult
    from tamesu.templates import Scope

__all__ = ["ACTION_TIMEOUT", "ASSERT_WAIT", "StepFailed", "StepRunner"]

ACTION_TIMEOUT = 10.0
"""Seconds an action waits for its element to be there and ready."""
ASSERT_WAIT = 5.0
"""Seconds assert_url and assert_text wait for the page to come to the expected state."""
CHECKS = ("assert_url", "assert_text", "a11y", "visual", "expect", "goal")
PAGE_TEXT = 8000
"""The most characters of the page's text an expect step shows the judge."""


class StepFailed(Exception):
    """The page did not do what the step needed; a failed assertion, not an infrastructure error."""

    def __init__(
        self,
        message: str,
        *,
        expected: Any = None,
        actual: Any = None,
        error: bool = False,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.details = details or {}
        """What the step found, for its event (an a11y step's rules)."""
        self.expected = expected
        self.actual = actual
        self.error = error
        """The check could not be made (a judge that did not answer), rather than failed."""
        self.event: dict[str, Any] = {}
        """The step's event, once the runner has made it."""


@dataclass
class StepRunner:
    """Runs the steps of one run on its page."""

    page: Page
    gate: Gate
    scope: Scope
    base_url: str
    shots_dir: Path | None = None
    suite_dir: Path = Path(".")
    update_golden: bool = False
    """Visual steps write their baselines instead of comparing (``tamesu run --update-golden``)."""
    results: list[AssertionResult] = field(default_factory=list)
    shots: int = 0
    models: Any = None
    """The run's model router (expect steps ask its judge)."""
    ledger: Any = None
    max_goal_steps: int = 15
    redactor: Any = None
    """The run's secret values, masked in what a step reports from the page (a11y findings)."""
    actions: list[dict[str, Any]] = field(default_factory=list)
    """The browser agent's actions not yet made events (the adapter takes them)."""

    async def run(self, index: int, step: Any) -> dict[str, Any]:
        """Do one step; returns its event. A failed step adds a failed result and raises StepFailed."""
        from tamesu.kernel.outcome import AssertionResult

        why = unsupported_step(step)
        if why is not None:
            raise TargetError(why, retryable=False, kind="config")
        if step.goal is not None:
            name, arg = "goal", render(step.goal, self.scope)
        elif step.expect is not None:
            name, arg = "expect", render(step.expect, self.scope)
        else:
            name, raw = next(iter(step.action.items()))
            arg = render(raw, self.scope)
        event: dict[str, Any] = {"step": index, "action": name}
        try:
            event.update(await getattr(self, "_" + name)(arg) or {})
            self.gate_held()
        except StepFailed as exc:
            event.update(exc.details, passed=False, message=str(exc))
            exc.event = event
            self.results.append(
                AssertionResult(
                    name=f"steps[{index}].{name}",
                    kind=name if name in CHECKS else "step",
                    passed=False,
                    expected=exc.expected,
                    actual=exc.actual,
                    error=exc.error,
                    message=f"step {index + 1} ({name}): {exc}",
                )
            )
            raise
        event["passed"] = True
        if name in CHECKS:
            self.results.append(
                AssertionResult(
                    name=f"steps[{index}].{name}",
                    kind=name,
                    passed=True,
                    expected=event.get("expected"),
                    message=str(event.get("message", "")),
                )
            )
        return event

    def gate_held(self) -> None:
        """Fail the step when the browser followed a redirect out of the allowed domains."""
        escapes = self.gate.take_escapes()
        if escapes:
            more = f" and {len(escapes) - 1} more" if len(escapes) > 1 else ""
            raise StepFailed(
                f"the page left the allowed domains ({', '.join(self.gate.domains)}): {escapes[0]}{more}"
            )

    def _ref(self, arg: Any, key: str = "ref") -> str:
        ref = arg.get(key) if isinstance(arg, dict) else arg
        if not isinstance(ref, str) or not ref:
            raise TargetError(f"this step needs an element selector ({key})", retryable=False, kind="config")
        return ref

    async def _act(self, what: str, coro: Any) -> None:
        from playwright.async_api import Error as PlaywrightError

        try:
            await coro
        except PlaywrightError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StepFailed(f"{what}: {first}") from None

    async def _navigate(self, arg: Any) -> dict[str, Any]:
        url = urljoin(self.base_url, str(arg.get("url") if isinstance(arg, dict) else arg))
        if not domain_allowed(url, self.gate.domains):
            raise StepFailed(f"{url} is outside the allowed domains ({', '.join(self.gate.domains)})")
        await self._act(f"navigate to {url}", self.page.goto(url, timeout=ACTION_TIMEOUT * 1000))
        return {"url": url}

    async def _click(self, arg: Any) -> dict[str, Any]:
        ref = self._ref(arg)
        await self._act(f"click {ref}", self.page.locator(ref).first.click(timeout=ACTION_TIMEOUT * 1000))
        return {"ref": ref}

    async def _fill(self, arg: Any) -> dict[str, Any]:
        ref = self._ref(arg)
        text = str(arg.get("text", "")) if isinstance(arg, dict) else ""
        await self._act(f"fill {ref}", self.page.locator(ref).first.fill(text, timeout=ACTION_TIMEOUT * 1000))
        return {"ref": ref, "chars": len(text)}

    async def _press(self, arg: Any) -> dict[str, Any]:
        key = str(arg.get("key") if isinstance(arg, dict) else arg)
        ref = arg.get("ref") if isinstance(arg, dict) else None
        if ref:
            await self._act(
                f"press {key}", self.page.locator(ref).first.press(key, timeout=ACTION_TIMEOUT * 1000)
            )
        else:
            await self._act(f"press {key}", self.page.keyboard.press(key))
        return {"key": key, **({"ref": ref} if ref else {})}

    async def _wait(self, arg: Any) -> dict[str, Any]:
        """A duration (``2s``) waits that long; a selector waits for the element to be visible."""
        if isinstance(arg, (int, float)) or (
            isinstance(arg, str) and re.fullmatch(r"[0-9.]+\s*(ms|s|m)?", arg)
        ):
            seconds = parse_duration(arg)
            await self.page.wait_for_timeout(seconds * 1000)
            return {"seconds": seconds}
        ref = self._ref(arg)
        await self._act(
            f"wait for {ref}",
            self.page.locator(ref).first.wait_for(state="visible", timeout=ACTION_TIMEOUT * 1000),
        )
        return {"ref": ref}

    async def _screenshot(self, arg: Any) -> dict[str, Any]:
        self.shots += 1
        name = str((arg.get("name") if isinstance(arg, dict) else arg) or f"step-{self.shots}")
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80] or f"step-{self.shots}"
        full = bool(arg.get("full_page")) if isinstance(arg, dict) else False
        data = await self.page.screenshot(full_page=full)
        if self.shots_dir is None:
            return {"name": name, "bytes": len(data)}
        self.shots_dir.mkdir(parents=True, exist_ok=True)
        path = self.shots_dir / f"{name}.png"
        path.write_bytes(data)
        return {"name": name, "path": str(path), "bytes": len(data)}

    async def _eval_js(self, arg: Any) -> dict[str, Any]:
        from playwright.async_api import Error as PlaywrightError

        script = str(arg.get("script") if isinstance(arg, dict) else arg)
        try:
            value = await self.page.evaluate(script)
        except PlaywrightError as exc:
            raise StepFailed(f"the script threw: {str(exc).strip().splitlines()[0][:300]}") from None
        text = json.dumps(value, default=str)
        return {"result": value if len(text) <= 2000 else text[:2000]}

    async def _mock(self, arg: Any) -> dict[str, Any]:
        from pydantic import ValidationError

        from tamesu.targets.browser.settings import BrowserMock

        try:
            mock = BrowserMock.model_validate(arg)
        except ValidationError as exc:
            raise TargetError(
                f"a mock step is not a valid mock: {exc.errors()[0]['msg']}", retryable=False, kind="config"
            ) from None
        self.gate.mocks.append(mock)
        return {"url": mock.url}

    async def _assert_url(self, arg: Any) -> dict[str, Any]:
        pattern = str(arg.get("url") if isinstance(arg, dict) else arg)
        page = self.page
        try:
            await page.wait_for_url(lambda url: url_matches(pattern, url), timeout=ASSERT_WAIT * 1000)
        except Exception:
            raise StepFailed(
                f"the page is at {page.url}, not {pattern}", expected=pattern, actual=page.url
            ) from None
        return {"expected": pattern, "actual": page.url}

    async def _assert_text(self, arg: Any) -> dict[str, Any]:
        """The text is on the page (or in the ``ref`` element), waiting for it up to ASSERT_WAIT."""
        text = str(arg.get("text") if isinstance(arg, dict) else arg)
        ref = (arg.get("ref") if isinstance(arg, dict) else None) or "body"
        where = self.page.locator(ref).first
        from playwright.async_api import expect

        try:
            await expect(where).to_contain_text(text, timeout=ASSERT_WAIT * 1000)
        except Exception:
            actual = ""
            try:
                actual = (await where.inner_text(timeout=1000))[:500]
            except Exception:
                actual = f"(no element {ref})"
            raise StepFailed(
                f"{text!r} is not on the page" + ("" if ref == "body" else f" in {ref}"),
                expected=text,
                actual=actual,
            ) from None
        return {"expected": text, **({"ref": ref} if ref != "body" else {})}

    async def _a11y(self, arg: Any) -> dict[str, Any]:
        """axe-core checks the page; violations at or above the impact fail (``browser_a11y``)."""
        from playwright.async_api import Error as PlaywrightError

        from tamesu.targets.browser import browser_a11y as a11y

        spec = a11y.a11y_spec(arg)
        element = None
        if spec.ref is not None:
            try:
                element = await self.page.locator(spec.ref).first.element_handle(
                    timeout=ACTION_TIMEOUT * 1000
                )
            except PlaywrightError:
                raise StepFailed(f"no element {spec.ref} to check") from None
        try:
            found = await a11y.check_page(self.page, spec, element)
        except PlaywrightError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StepFailed(f"axe-core could not check the page: {first[:300]}", error=True) from None
        except TimeoutError:
            raise StepFailed(f"axe-core did not finish within {a11y.CHECK_TIMEOUT:g} s", error=True) from None
        if self.redactor:
            found = self.redactor.redact_obj(found)
        failing = [v for v in found if a11y.severity(v["impact"]) >= a11y.severity(spec.impact)]
        expected = f"no accessibility violations at or above {spec.impact}"
        event = {"impact": spec.impact, "violations": len(failing), "milder": len(found) - len(failing),
                 "rules": [v["rule"] for v in failing], "expected": expected}  # fmt: skip
        if failing:
            listed = failing[: a11y.MAX_LISTED]
            raise StepFailed(
                a11y.describe(failing, spec.impact), expected=expected, actual=listed, details=event
            )
        milder = f" ({len(found)} milder)" if found else ""
        return {**event, "message": f"no accessibility violations at or above {spec.impact}{milder}"}

    async def _visual(self, arg: Any) -> dict[str, Any]:
        """The page against its baseline (written instead under ``--update-golden``)."""
        from tamesu.targets.browser import browser_visual as visual

        spec = visual.visual_spec(arg)
        actual = await visual.screenshot(self.page, spec)
        path = visual.baseline_path(self.suite_dir, spec)
        if self.update_golden:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(actual)
            return {"name": spec.name, "baseline": str(path), "message": f"baseline {path} written"}
        if not path.is_file():
            raise StepFailed(
                f"no baseline at {path}: run tamesu run --update-golden to write it", expected=str(path)
            )
        baseline = path.read_bytes()
        share, diff = visual.compare(baseline, actual)
        event = {"name": spec.name, "baseline": str(path), "differ": round(share, 6), "expected": str(path)}
        if share <= spec.tolerance:
            return event
        if self.shots_dir is not None:
            self.shots_dir.mkdir(parents=True, exist_ok=True)
            (self.shots_dir / f"{spec.name}.actual.png").write_bytes(actual)
            if diff is not None:
                (self.shots_dir / f"{spec.name}.diff.png").write_bytes(diff)
        raise StepFailed(
            visual.describe(share, spec, baseline, actual), expected=str(path), actual=round(share, 6)
        )

    async def _expect(self, statement: Any) -> dict[str, Any]:
        """A judge reads the page (its address, title and text) and says whether the statement
        holds; the screenshot it was judged on is kept as the evidence."""
        from tamesu.errors import ModelError
        from tamesu.judging import grade

        statement = str(statement)
        shot = await self._screenshot({"name": f"expect-{self.shots + 1}"})
        if self.models is None or not self.models.model_for("judge"):
            raise StepFailed(
                "an expect step needs a judge model: set models.judge or models.default", error=True
            )
        text = (await self.page.locator("body").inner_text())[:PAGE_TEXT]
        evidence = f"Address: {self.page.url}\nTitle: {await self.page.title()}\nVisible text:\n{text}"
        try:
            verdict = await grade(self.models, statement, evidence, ledger=self.ledger, what="web page")
        except ModelError as exc:
            raise StepFailed(f"the judge did not answer: {exc}", error=True) from None
        event = {"expected": statement, "reason": verdict.reason, "model": verdict.model,
                 "screenshot": shot.get("path"), "message": verdict.reason}  # fmt: skip
        if not verdict.passed:
            raise StepFailed(verdict.reason, expected=statement, actual=shot.get("path"))
        return event

    async def _goal(self, goal: Any) -> dict[str, Any]:
        """The browser agent acts until the goal is met (``browser_goal``)."""
        from tamesu.errors import ModelError
        from tamesu.targets.browser.browser_goal import GoalAgent, GoalFailed

        goal = str(goal)
        if self.models is None or not self.models.model_for("browser_agent"):
            raise StepFailed(
                "a goal step needs a browser agent model: set models.browser_agent or models.default",
                error=True,
            )
        agent = GoalAgent(
            self.page,
            self.models,
            self.base_url,
            lambda url: domain_allowed(url, self.gate.domains),
            max_steps=self.max_goal_steps,
            ledger=self.ledger,
        )
        try:
            reason = await agent.pursue(goal)
        except GoalFailed as exc:
            raise StepFailed(str(exc), expected=goal, actual=f"{len(agent.actions)} actions") from None
        except ModelError as exc:
            raise StepFailed(f"the browser agent did not answer: {exc}", error=True) from None
        finally:
            self.actions.extend(agent.actions)
        return {"expected": goal, "actions": len(agent.actions), "message": reason}
