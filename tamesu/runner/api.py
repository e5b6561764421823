"""``tamesu.run()``: load, plan, resolve secrets, schedule, store and report; the CLI is a thin layer over it.

A config error raises ``ConfigErrors`` before anything runs (exit 2), and a selection that leaves
no test raises ``NoTestSelected`` (exit 5); everything after that (a test this environment cannot
run, a secret a test uses that cannot be resolved) is reported in the returned
``InvocationResult``, whose ``exit_code`` is what ``tamesu run`` exits with.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from datetime import date, datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.cycle_collector import freeze_what_runs_left, set_for_runs
from tamesu.errors import ClusterLost, UsageError
from tamesu.runner.invocation import (
    Finished,
    InvocationResult,
    Publisher,
    Reporter,
    RunOptions,
    check_processes,
    check_stt_engine,
)
from tamesu.runner.livekit_serve import LivekitServe, ServedLivekit, serve_livekit
from tamesu.runner.prepare import load_suites, needs_speech, plan_runs, router_factory
from tamesu.runner.rates import EarlyStopper, RateRule
from tamesu.runner.results import ResultsStore, latest_run_dir, output_dir
from tamesu.runner.scheduler import Scheduler
from tamesu.runner.suite_setup import SuiteSetup, suite_setups
from tamesu.runner.verdict import exit_code, final_results, run_key, verdicts
from tamesu.secrets import Redactor

if TYPE_CHECKING:
    from tamesu.config.loader import LoadedSuite
    from tamesu.run_spec import RunSpec

__all__ = ["InvocationResult", "RunOptions", "interrupt_on_signals", "run", "run_async"]


def run(
    paths: Iterable[str | Path] | str | Path = (),
    *,
    reporter: Reporter | None = None,
    redactor: Redactor | None = None,
    argv: Sequence[str] | None = None,
    livekit_server: LivekitServe | None = None,
    publishers: Sequence[Publisher] = (),
    **options: Any,
) -> InvocationResult:
    """Run suites (files or folders; default the current folder) and return the invocation's result.

    ``options`` are the fields of ``RunOptions`` (``concurrency=8, tags=["smoke"], junit="out.xml"``).
    ``publishers`` are called in turn once the verdicts are in (``tamesu.run`` passes the reports,
    the history and telemetry); the run directory's results are written either way.
    """
    return asyncio.run(
        run_async(
            paths, reporter=reporter, redactor=redactor, argv=argv, livekit_server=livekit_server,
            publishers=publishers, **options,
        )
    )  # fmt: skip


async def run_async(
    paths: Iterable[str | Path] | str | Path = (),
    *,
    reporter: Reporter | None = None,
    redactor: Redactor | None = None,
    argv: Sequence[str] | None = None,
    livekit_server: LivekitServe | None = None,
    publishers: Sequence[Publisher] = (),
    **options: Any,
) -> InvocationResult:
    """``run`` inside a running event loop. ``livekit_server`` serves ``livekit: { serve: true }``
    (``tamesu.testing.serve_livekit_server``; the command line passes it)."""
    try:
        opts = RunOptions(**options)
    except TypeError as exc:
        raise UsageError(str(exc)) from None
    check_processes(opts.processes, ray=bool(opts.ray or opts.address))
    check_stt_engine(opts.stt_engine)
    started = time.time()
    redactor = redactor if redactor is not None else Redactor()
    reporter = reporter or Reporter()
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    resume_dir = _resume_dir(opts, paths)
    if resume_dir is not None and not paths:
        paths = list(ResultsStore.open(resume_dir).settings.get("suite_paths", []))
    loaded = load_suites(paths or ["."], opts)
    async with contextlib.AsyncExitStack() as services:
        served = await serve_livekit(loaded, services, redactor, livekit_server)
        services.enter_context(set_for_runs())
        return await _run_loaded(
            loaded, served, paths, resume_dir, opts, started, redactor, reporter, argv, publishers
        )


async def _run_loaded(
    loaded: list[LoadedSuite],
    served: ServedLivekit | None,
    paths: list[str | Path],
    resume_dir: Path | None,
    opts: RunOptions,
    started: float,
    redactor: Redactor,
    reporter: Reporter,
    argv: Sequence[str] | None,
    publishers: Sequence[Publisher],
) -> InvocationResult:
    """Plan, schedule, store and report the loaded suites (the second half of ``run_async``)."""
    specs = plan_runs(loaded, opts)
    setups, specs = suite_setups(loaded, specs, redactor)
    if served is not None:
        served.apply(setups)
    project_dir = next((s.project_dir for s in loaded if s.project_dir is not None), None)
    project = next((s.project for s in loaded if s.project is not None), None)
    where = output_dir(opts.output or getattr(project, "output", None), project_dir)
    if resume_dir is None and opts.resume:
        resume_dir = latest_run_dir(where, suite_paths=[str(s.path.resolve()) for s in loaded])
        if resume_dir is None:
            raise UsageError(f"--resume: no earlier run of these suites under {where}")
    settings = _settings(loaded, opts, argv, redactor, started)
    if resume_dir is not None:
        store = ResultsStore.open(resume_dir)
        store.resume()
        store.mark_latest()
    else:
        store = ResultsStore.create(
            where, suites=[s.suite.suite for s in loaded], settings=settings, now=started
        )
    try:
        for note in store.notes:
            reporter.note(note)
        previous = store.finished() if resume_dir is not None else []
        done = {run_key(r.suite, r.run_id) for r in previous}
        todo = [spec for spec in specs if run_key(spec.suite, spec.run_id) not in done]

        concurrency = opts.concurrency or getattr(project, "concurrency", None) or 4
        routers = router_factory(project, project_dir, setups, opts)
        rule = RateRule.from_settings(getattr(project, "statistics", None))
        stopper = EarlyStopper.for_plan(rule, specs)
        if stopper is not None:
            for earlier in previous:
                stopper.observe(earlier)
        try:
            outcome = await _schedule(
                todo, setups, store, reporter, redactor, opts, concurrency, routers, stopper
            )
        except ClusterLost as exc:
            planned_keys = {run_key(s.suite, s.run_id) for s in specs}
            kept = sum(1 for r in store.finished() if run_key(r.suite, r.run_id) in planned_keys)
            raise exc.kept_in(store.dir, finished=kept, planned=len(specs), command="run") from None
        freeze_what_runs_left()

        planned = {run_key(s.suite, s.run_id) for s in specs}
        finals = [
            r for r in final_results([*previous, *outcome.results]) if run_key(r.suite, r.run_id) in planned
        ]
        tests = verdicts(specs, finals, rule=rule)
        code = exit_code(
            tests, budget_exceeded=bool(outcome.budget_exceeded), interrupted=outcome.interrupted
        )
        result = InvocationResult(
            exit_code=code,
            tests=tests,
            results=finals,
            attempts=outcome.results,
            run_dir=store.dir,
            suites=[s.suite.suite for s in loaded],
            started_at=started,
            duration=time.time() - started,
            interrupted=outcome.interrupted,
            budget_exceeded=outcome.budget_exceeded,
            resumed=len(previous),
            settings=settings,
            capacity=[held.to_dict() for held in outcome.capacity],
        )
        finished = Finished(result, store, opts, redactor, project, project_dir, reporter.note)
        for publish in publishers:
            publish(finished)
        return result
    finally:
        store.close()


def _resume_dir(opts: RunOptions, paths: list[str | Path]) -> Path | None:
    """``--resume DIR``, or ``--resume`` without suites: the newest run directory of the project.
    ``--resume`` with suites is looked up once they are loaded (the newest run of those suites)."""
    if opts.resume is True and not paths:
        from tamesu.config.loader import load_project

        found = load_project(Path.cwd())
        project, project_dir = found if found else (None, None)
        where = output_dir(opts.output or getattr(project, "output", None), project_dir)
        latest = latest_run_dir(where)
        if latest is None:
            raise UsageError(f"--resume: no earlier run under {where}")
        return latest
    if isinstance(opts.resume, (str, Path)) and str(opts.resume):
        path = Path(opts.resume)
        if not (path / "settings.json").is_file():
            raise UsageError(f"--resume: {path} is not a tamesu run directory")
        return path
    return None


def _settings(
    loaded: Sequence[LoadedSuite],
    opts: RunOptions,
    argv: Sequence[str] | None,
    redactor: Redactor,
    started: float,
) -> dict[str, Any]:
    """What was asked, for the run directory: never a secret value (the command line is redacted)."""
    from tamesu.version import __version__

    options = {k: (str(v) if isinstance(v, (Path, date)) else v) for k, v in dataclasses.asdict(opts).items()}
    options["tags"], options["exclude_tags"] = list(opts.tags), list(opts.exclude_tags)
    options["only"] = None if opts.only is None else sorted(opts.only)
    return {
        "argv": [redactor.redact(a) for a in (argv if argv is not None else sys.argv)],
        "cwd": os.getcwd(),
        "suites": [s.suite.suite for s in loaded],
        "suite_paths": [str(s.path.resolve()) for s in loaded],
        "options": options,
        "tamesu_version": __version__,
        "started_at": datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds"),
    }


async def _schedule(
    todo: list[RunSpec],
    setups: dict[str, SuiteSetup],
    store: ResultsStore,
    reporter: Reporter,
    redactor: Redactor,
    opts: RunOptions,
    concurrency: int,
    routers: Any = None,
    early_stop: EarlyStopper | None = None,
) -> Any:
    from tamesu.actors.services import RunServices

    services = RunServices.create(
        redactor=redactor, update_golden=opts.update_golden, output_dir=store.dir, router_factory=routers
    )
    from tamesu.runner.placement.processes import ProcessPlacement, process_count

    placement: Any
    if opts.ray or opts.address:
        from tamesu.runner.placement.ray import RayPlacement

        embedded = opts.address is None
        placement = RayPlacement(
            address=opts.address,
            num_workers=min(os.cpu_count() or 1, concurrency) if embedded else None,
            update_golden=opts.update_golden,
            output_dir=store.dir,
            max_concurrency_per_worker=max(concurrency, 1),
            router_factory=routers,
            speech_pool=needs_speech(todo),
        )
    elif (count := process_count(opts.processes, todo, concurrency)) > 1:
        placement = ProcessPlacement(
            processes=count,
            update_golden=opts.update_golden,
            output_dir=store.dir,
            max_concurrency_per_worker=max(1, -(-concurrency // count)),
            router_factory=routers,
        )
    else:
        from tamesu.runner.placement.local import LocalPlacement

        placement = LocalPlacement(services)
    scheduler = Scheduler(
        placement,
        concurrency=concurrency,
        per_target=opts.per_target,
        suites=setups,
        store=store,
        reporter=reporter,
        redactor=redactor,
        http=services.http,
        fail_fast=opts.fail_fast,
        early_stop=early_stop,
    )
    with interrupt_on_signals(scheduler):
        try:
            return await scheduler.run(todo)
        finally:
            with contextlib.suppress(Exception):
                await placement.aclose()
            await services.aclose()


@contextlib.contextmanager
def interrupt_on_signals(target: Any, *, sigterm: bool = False) -> Any:
    """Ctrl-C calls ``target.interrupt()`` (what finished stays written); a second Ctrl-C aborts.
    With ``sigterm`` a SIGTERM (what a stopped Ray job gets) interrupts too."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    presses = 0

    def on_sigint() -> None:
        nonlocal presses
        presses += 1
        if presses > 1:
            loop.remove_signal_handler(signal.SIGINT)
            raise KeyboardInterrupt
        target.interrupt()

    handlers: list[tuple[signal.Signals, Any]] = [(signal.SIGINT, on_sigint)]
    if sigterm:
        handlers.append((signal.SIGTERM, target.interrupt))
    installed = []
    for sig, handler in handlers:
        try:
            loop.add_signal_handler(sig, handler)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
