"""Setup and teardown hooks around a suite and its runs.

The scheduler decides what a failure means (``before_each``: an infrastructure error for that run;
``after_each``: logged only); this module collects a stage's hooks and runs them in order, each
through ``tamesu.hook_call.run_hook``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tamesu.hook_call import DEFAULT_HOOK_TIMEOUT, HookOutcome, run_hook

if TYPE_CHECKING:
    import httpx

    from tamesu.config import Hook
    from tamesu.secrets import Redactor
    from tamesu.templates import Scope

__all__ = [
    "DEFAULT_HOOK_TIMEOUT",
    "HookOutcome",
    "Stage",
    "collect_hooks",
    "hook_env",
    "run_hook",
    "run_hooks",
]

Stage = Literal["before_all", "before_each", "after_each", "after_all"]


def hook_env(
    *, suite: str, test: str | None = None, session: str | None = None, run_id: str | None = None
) -> dict[str, str]:
    """The TAMESU_* variables a hook sees (also as ``{{env.TAMESU_SUITE}}`` in its templates)."""
    env = {"TAMESU_SUITE": suite}
    if test is not None:
        env["TAMESU_TEST"] = test
    if session is not None:
        env["TAMESU_SESSION"] = session
    if run_id is not None:
        env["TAMESU_RUN_ID"] = run_id
    return env


def collect_hooks(stage: Stage, project: Any, suite: Any) -> list[Hook]:
    """The hooks of one stage: the project's around the suite's (setup outside-in, teardown inside-out)."""
    project_hooks = _stage_hooks(getattr(project, "hooks", None), stage)
    suite_hooks = _stage_hooks(getattr(suite, "hooks", None), stage)
    if stage.startswith("before"):
        return project_hooks + suite_hooks
    return suite_hooks + project_hooks


def _stage_hooks(hooks: Any, stage: Stage) -> list[Hook]:
    return list(getattr(hooks, stage, None) or []) if hooks is not None else []


async def run_hooks(
    hooks: Sequence[Hook],
    *,
    scope: Scope,
    env: Mapping[str, str],
    suite_dir: Path | str,
    http: httpx.AsyncClient | None = None,
    redactor: Redactor,
) -> HookOutcome:
    """Run hooks in order and stop at the first failure, which is the outcome returned."""
    total = 0.0
    done: list[str] = []
    for hook in hooks:
        outcome = await run_hook(
            hook, scope=scope, env=env, suite_dir=suite_dir, http=http, redactor=redactor
        )
        total += outcome.duration
        if not outcome.ok:
            outcome.duration = total
            return outcome
        done.append(outcome.hook)
    return HookOutcome(True, f"{len(done)} hook(s) ran", total, "; ".join(done))
