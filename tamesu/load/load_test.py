"""``run_load``: one load test from suites to report; ``tamesu load`` is a thin layer over it.

Loading, planning and secrets are exactly ``tamesu run``'s (the same helpers), so a call under load
is graded as the same test would be in a plain run. The run directory is a normal one (results.jsonl,
transcripts.jsonl) plus calls.jsonl, load.json (the checkpoint) and load-report.json.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from tamesu.errors import ClusterLost, UsageError
from tamesu.secrets import Redactor
from tamesu.untrusted import printable

if TYPE_CHECKING:
    from tamesu.config.load_profile import LoadProfile
    from tamesu.config.loader import LoadedSuite
    from tamesu.load.driver import LoadDriver, LoadOutcome
    from tamesu.run_spec import RunSpec
    from tamesu.runner.results import ResultsStore

__all__ = [
    "REPORT_FILE",
    "LoadRequest",
    "LoadResult",
    "latest_load_dir",
    "prepare_load",
    "run_load",
]

REPORT_FILE = "load-report.json"
EXIT_OK, EXIT_GATE, EXIT_INFRA, EXIT_BUDGET, EXIT_INTERRUPTED = 0, 1, 3, 4, 130


@dataclass
class LoadRequest:
    """What ``tamesu load`` was asked (``overrides`` are LoadProfile keys, ``gates`` nested)."""

    paths: Sequence[str] = ()
    overrides: dict[str, Any] = field(default_factory=dict)
    tags: Sequence[str] | None = None
    exclude_tags: Sequence[str] | None = None
    filter: str | None = None
    timeout: str | None = None
    seed: int | None = None
    ray: bool = False
    address: str | None = None
    stt_engine: str | None = None
    """The STT engine that hears every call's agent; None: chosen per line and language."""
    processes: int | str | None = None
    """Worker processes on this machine that run the calls (``auto``: the cores the agent leaves
    free); None or 1: the calls run in this process."""
    resume: bool | str = False
    output: str | None = None
    json: str | None = None
    transcripts: str = "all"
    live: bool | None = None
    quiet: bool = False
    color: bool = False
    argv: Sequence[str] | None = None
    stream: Any = None
    """Where the live view and the report go (stdout by default)."""
    placement_options: dict[str, Any] = field(default_factory=dict)
    """Extra keyword arguments of RayPlacement (tests pass num_cpus, worker_setup)."""
    cpu_meter: Any = None
    """A capacity search's meter of tamesu's own CPU per step (default ``CpuMeter`` over the
    placement; tests stand in a saturated one)."""


@dataclass
class LoadResult:
    exit_code: int
    report: dict[str, Any]
    run_dir: Path
    outcome: LoadOutcome | None = None


def latest_load_dir(output: Path, suite_paths: Sequence[str]) -> Path | None:
    """The newest load test run directory of exactly these suites under ``output``."""
    if not output.is_dir():
        return None
    wanted = sorted(suite_paths)
    for path in sorted((p for p in output.iterdir() if p.is_dir() and not p.is_symlink()), reverse=True):
        try:
            settings = json.loads((path / "settings.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if settings.get("kind") == "load" and sorted(settings.get("suite_paths", [])) == wanted:
            return path
    return None


def prepare_load(request: LoadRequest, paths: Sequence[str]) -> tuple[list[LoadedSuite], list[Any], Any]:
    """Load and plan exactly as ``tamesu run`` does: (loaded suites, run specs, run options)."""
    from tamesu.runner.invocation import RunOptions
    from tamesu.runner.prepare import load_suites, plan_runs

    opts = RunOptions(
        tags=list(request.tags or ()),
        exclude_tags=list(request.exclude_tags or ()),
        filter=request.filter,
        seed=request.seed,
        timeout=None if request.timeout is None else _seconds(request.timeout),
        stt_engine=request.stt_engine,
    )
    loaded = load_suites(list(paths) or ["."], opts)
    specs = plan_runs(loaded, opts)
    return loaded, specs, opts


def _seconds(text: str) -> float:
    from tamesu.durations import parse_duration

    return parse_duration(text)


def _store(
    request: LoadRequest, loaded: Sequence[LoadedSuite], where: Path, profile: LoadProfile, redactor: Redactor
) -> tuple[ResultsStore, bool]:
    from tamesu.runner.results import ResultsStore
    from tamesu.version import __version__

    paths = [str(s.path.resolve()) for s in loaded]
    if request.resume:
        directory = Path(request.resume) if isinstance(request.resume, str) else latest_load_dir(where, paths)
        if directory is None or not (directory / "settings.json").is_file():
            raise UsageError(f"--resume: no earlier load test of these suites under {where}")
        store = ResultsStore.open(directory)
        store.resume()
        store.mark_latest()
        return store, True
    started = time.time()
    settings = {
        "kind": "load",
        "argv": [redactor.redact(a) for a in (request.argv or sys.argv)],
        "cwd": os.getcwd(),
        "suites": [s.suite.suite for s in loaded],
        "suite_paths": paths,
        "profile": profile.model_dump(by_alias=True),
        "tamesu_version": __version__,
        "started_at": datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds"),
    }
    store = ResultsStore.create(
        where, suites=[f"load-{s.suite.suite}" for s in loaded], settings=settings, now=started
    )
    return store, False


def _profile(request: LoadRequest, loaded: Sequence[LoadedSuite], resume_dir: Path | None) -> LoadProfile:
    from tamesu.config.load_profile import LoadProfile, merge_profile

    base: LoadProfile | None = next(
        (s.project.load for s in loaded if s.project is not None and s.project.load), None
    )
    if resume_dir is not None:
        saved = json.loads((resume_dir / "settings.json").read_text(encoding="utf-8")).get("profile")
        if saved:
            base = LoadProfile.model_validate(saved)
    try:
        return merge_profile(base, **dict(request.overrides))
    except ValueError as exc:
        raise UsageError(f"load profile: {exc}") from None


def _placement(
    request: LoadRequest,
    profile: LoadProfile,
    services: Any,
    store: ResultsStore,
    specs: Sequence[Any] = (),
    routers: Any = None,
) -> Any:
    from tamesu.runner.placement.processes import ProcessPlacement, process_count
    from tamesu.runner.prepare import needs_speech

    spike = profile.spike_window()
    if profile.capacity is not None:
        peak = profile.capacity.max_concurrency
    elif profile.mode == "rate":
        peak = profile.max_in_flight
    else:
        peak = math.ceil(profile.level * (spike[2] if spike else 1))
    if not request.ray:
        count = process_count(request.processes, specs, peak)
        if count > 1:
            return ProcessPlacement(
                processes=count,
                max_concurrency_per_worker=max(8, math.ceil(peak / count) + 4),
                output_dir=store.dir,
                router_factory=routers,
                **request.placement_options,
            )
        from tamesu.runner.placement.local import LocalPlacement

        return LocalPlacement(services)
    from tamesu.runner.placement.ray import RayPlacement

    workers = profile.workers
    if workers is None and request.address is None:
        workers = max(1, min(os.cpu_count() or 1, peak))
    per_worker = max(8, math.ceil(peak / (workers or 1)) + 4)
    return RayPlacement(
        address=request.address,
        num_workers=workers,
        max_concurrency_per_worker=per_worker,
        output_dir=store.dir,
        speech_pool=needs_speech(specs),
        router_factory=routers,
        **request.placement_options,
    )


def _exit_code(outcome: LoadOutcome, gates_ok: bool) -> int:
    if outcome.interrupted:
        return EXIT_INTERRUPTED
    if outcome.budget_exceeded:
        return EXIT_BUDGET
    if not any(s.final and s.outcome != "error" for s in outcome.samples):
        return EXIT_INFRA
    return EXIT_OK if gates_ok else EXIT_GATE


async def run_load(request: LoadRequest) -> LoadResult:
    """Run one load test and write its report; never raises for what the calls do. The collector
    is set for runs throughout (``tamesu.cycle_collector``): a load test keeps every call's sample
    and result until its report is written."""
    from tamesu.cycle_collector import set_for_runs

    with set_for_runs():
        return await _run_load(request)


async def _run_load(request: LoadRequest) -> LoadResult:
    from tamesu.actors.services import RunServices
    from tamesu.costs import cost_summary
    from tamesu.load.driver import CHECKPOINT_FILE, LoadCheckpoint, LoadDriver, read_samples
    from tamesu.load.gates import evaluate_gates
    from tamesu.load.live import LiveView
    from tamesu.load.report_data import build_load_report, write_load_report
    from tamesu.load.verdicts import load_gates, load_verdicts, one_spec_per_test, write_summary
    from tamesu.reports.load_report import render_load_report
    from tamesu.runner.results import output_dir
    from tamesu.runner.suite_setup import suite_setups
    from tamesu.runner.verdict import final_results

    redactor = Redactor()
    started_at = time.time()
    paths = list(request.paths)
    if isinstance(request.resume, str) and not paths:
        paths = json.loads((Path(request.resume) / "settings.json").read_text(encoding="utf-8"))[
            "suite_paths"
        ]
    from tamesu.runner.invocation import check_processes, check_stt_engine

    check_processes(request.processes, ray=request.ray)
    check_stt_engine(request.stt_engine)
    loaded, specs, _ = prepare_load(request, paths)
    project = next((s.project for s in loaded if s.project is not None), None)
    project_dir = next((s.project_dir for s in loaded if s.project_dir is not None), None)
    where = output_dir(request.output or getattr(project, "output", None), project_dir)
    resume_dir = None
    if request.resume:
        resume_dir = (
            Path(request.resume)
            if isinstance(request.resume, str)
            else latest_load_dir(where, [str(s.path.resolve()) for s in loaded])
        )
    profile = _profile(request, loaded, resume_dir)
    setups, specs = suite_setups(loaded, specs, redactor)
    store, resumed = _store(request, loaded, where, profile, redactor)
    stream = request.stream or sys.stdout
    planned = one_spec_per_test(specs, store.notes.append)
    specs = _leave_out_unrunnable(planned, store, redactor, stream, write=not resumed)
    gates = load_gates(profile, loaded, specs)
    calls = profile.total_calls
    if gates.thresholds and profile.capacity is None and calls is not None and calls < len(specs):
        store.notes.append(
            f"{len(specs)} tests share {calls} calls: {len(specs) - calls} of them get none, and a test "
            "with no call fails its pass-rate gate (set more --calls, or one --min-pass-rate)"
        )
    from tamesu.runner.invocation import RunOptions
    from tamesu.runner.prepare import router_factory

    routers = router_factory(project, project_dir, setups, RunOptions())
    services = RunServices.create(redactor=redactor, output_dir=store.dir, router_factory=routers)
    placement = _placement(request, profile, services, store, specs, routers)
    from tamesu.clock import MonotonicClock
    from tamesu.runner.suite_setup import Budget

    clock, budget = MonotonicClock(), Budget()

    def build(p: LoadProfile) -> LoadDriver:
        return LoadDriver(
            placement,
            specs,
            p,
            store=store,
            setups=setups,
            clock=clock,
            seed=request.seed,
            redactor=redactor,
            http=services.http,
            transcripts=request.transcripts,
            budget=budget,
        )

    driver = build(profile)
    search = None
    if profile.capacity is not None:
        from tamesu.load.capacity_run import CapacityRun

        if resumed:
            raise UsageError("--resume does not continue a capacity search: start a new one")
        from tamesu.load.capacity import CpuMeter

        meter = request.cpu_meter or CpuMeter(placement)
        search = CapacityRun(build, profile, gates, clock, meter=meter)
    elif resumed:
        saved = store.dir / CHECKPOINT_FILE
        point = LoadCheckpoint()
        if saved.is_file():
            import msgspec

            point = msgspec.convert(
                json.loads(saved.read_text(encoding="utf-8"))["checkpoint"], LoadCheckpoint
            )
        driver.resume(point, read_samples(store.dir))
    view = LiveView(
        search.snapshot if search is not None else lambda: driver.stats.snapshot(driver.now()),
        title=f"tamesu load {', '.join(s.suite.suite for s in loaded)}",
        color=request.color,
        live=request.live,
        quiet=request.quiet,
        stream=stream,
    )
    if not request.quiet:
        where_calls = f" in {placement.processes} worker processes" if hasattr(placement, "processes") else ""
        stream.write(f"Load test: {_describe(profile)}{where_calls}; results in {store.dir}\n")
        for note in store.notes:
            stream.write(f"note: {note}\n")
        stream.flush()
    view.start()
    found = None
    try:
        from tamesu.runner.api import interrupt_on_signals

        with interrupt_on_signals(search or driver, sigterm=True):
            if search is not None:
                found, outcome = await search.run()
            else:
                outcome = await driver.run()
    except ClusterLost as exc:
        if search is not None:
            kept = (
                f"{len(store.finished())} calls finished and are kept in {store.dir}; a capacity search "
                "does not resume: start a new one (in-process, or --address a new cluster)"
            )
            raise ClusterLost(exc.address, silent_for=exc.silent_for, kept=kept) from None
        total = profile.total_calls
        lost = exc.kept_in(
            store.dir, finished=driver.stats.finished, planned=total, command="load", what="calls"
        )
        raise lost from None
    finally:
        await view.stop()
        with contextlib.suppress(Exception):
            await placement.aclose()
        await services.aclose()
    from tamesu.cycle_collector import freeze_what_runs_left

    freeze_what_runs_left()
    if found is not None:
        from tamesu.load.capacity_run import capacity_exit_code

        held = [lv for lv in found.levels if lv.concurrency == found.concurrency]
        checks = held[0].gates if held else (found.levels[0].gates if found.levels else [])
        code = capacity_exit_code(found, outcome)
    else:
        checks = evaluate_gates(gates, outcome.samples)
        code = _exit_code(outcome, all(g.passed for g in checks))
    attempts = store.results()
    finals = [r for r in final_results(attempts) if r.final]
    tests = load_verdicts(planned, finals, project)
    report = build_load_report(
        outcome.samples,
        finals,
        checks,
        profile=profile.model_dump(by_alias=True),
        window=gates.window,
        elapsed=outcome.elapsed,
        shed=outcome.stats.shed,
        exit_code=code,
        run_dir=str(store.dir),
        interrupted=outcome.interrupted,
        budget_exceeded=outcome.budget_exceeded,
        verdicts={(t.suite, t.test_id): (t.verdict, t.pass_threshold) for t in tests},
        capacity=found.to_dict() if found is not None else None,
        cost=cost_summary(attempts, finals),
    )
    write_load_report(report, store.dir / REPORT_FILE, redactor=redactor)
    write_summary(store, tests, attempts, finals, outcome, code, loaded, started_at, redactor)
    if request.json:
        write_load_report(report, request.json, redactor=redactor)
    render_load_report(report, color=request.color, stream=stream, redactor=redactor)
    notes = list(outcome.notes)
    if not outcome.interrupted:
        from tamesu.history import invocation_of_load
        from tamesu.reports.publish import record_history

        inv = invocation_of_load(
            redactor.redact_obj(report),
            finals,
            verdicts={(t.suite, t.test_id): t.verdict for t in tests},
            suites=[s.suite.suite for s in loaded],
            started_at=started_at,
            argv=request.argv or (),
        )
        record_history(inv, project=project, project_dir=project_dir, output=where, note=notes.append)
    for note in notes:
        stream.write(redactor.redact(f"note: {printable(note)}") + "\n")
    store.close()
    return LoadResult(exit_code=code, report=report, run_dir=store.dir, outcome=outcome)


def _leave_out_unrunnable(
    specs: list[RunSpec], store: ResultsStore, redactor: Redactor, stream: TextIO, *, write: bool
) -> list[RunSpec]:
    """The runs a load test calls: those this environment cannot run are reported once each, as
    errors in results.jsonl (and so in the report's tests), and never called."""
    from tamesu.runner.results import redact_result
    from tamesu.runner.verdict import result_of

    runnable, errors = [], []
    for spec in specs:
        cannot = spec.cannot_run
        if cannot is None:
            runnable.append(spec)
        else:
            errors.append(redact_result(result_of(spec, error=cannot[0], error_kind=cannot[1]), redactor))
    if errors and write:
        store.append_many(errors)
    for result in errors:
        stream.write(
            redactor.redact(f"not run here: {result.suite} / {result.test_id}: {result.error}") + "\n"
        )
    return runnable


def _describe(profile: LoadProfile) -> str:
    search = profile.capacity
    if search is not None:
        return (
            f"capacity search from {search.start} to at most {search.max_concurrency} calls in flight, "
            f"steps of at least {search.step_calls} calls and {search.step_seconds}, "
            f"cool-down {search.cool_down}, within {search.max_duration}"
        )
    pace = f"{profile.rate:g} calls/s" if profile.mode == "rate" else f"{profile.level:g} calls in flight"
    size = []
    if profile.total_calls is not None:
        size.append(f"{profile.total_calls} calls")
    if profile.duration is not None:
        size.append(f"for {profile.duration}")
    extra = f", ramp-up {profile.ramp_up}" if profile.ramp_up else ""
    return f"{profile.shape}, {pace}, {' or '.join(size)}{extra}"
