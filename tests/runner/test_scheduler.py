from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tamesu.config import Hook
from tamesu.errors import BudgetExceeded, TargetError
from tamesu.kernel.outcome import AssertionResult, GraphOutcome, RunResult
from tamesu.kernel.transcript import Transcript, Turn
from tamesu.run_spec import RunSpec
from tamesu.runner import attempt as attempt_module
from tamesu.runner import scheduler as scheduler_module
from tamesu.runner.attempt import session_id
from tamesu.runner.invocation import Reporter
from tamesu.runner.results import ResultsStore, read_transcript
from tamesu.runner.scheduler import Scheduler
from tamesu.runner.suite_setup import Budget, SuiteSetup
from tamesu.runner.verdict import exit_code, verdicts
from tamesu.secrets import Redactor
from tamesu.templates import Scope

from ..stored import stored_lines

pytestmark = pytest.mark.timing

WAIT = 5.0
"""Upper bound for a condition that should hold at once; a hang fails the test instead of blocking CI."""


def make_spec(
    test: str = "t", *, repeat: int = 0, repeats: int = 1, target: str = "api", suite: str = "s", **kw: Any
) -> RunSpec:
    run_id = f"{test}#{repeat + 1}" if repeats > 1 else test
    return RunSpec(
        run_id=run_id,
        test_id=test,
        test_name=test,
        suite=suite,
        suite_path=f"/suites/{suite}.yaml",
        suite_dir="/suites",
        target_name=target,
        target=None,  # type: ignore[arg-type]
        test=None,  # type: ignore[arg-type]
        repeat_index=repeat,
        repeats=repeats,
        **kw,
    )


def passed(name: str = "contains") -> AssertionResult:
    return AssertionResult(name=name, kind=name, passed=True)


def failed(name: str = "contains") -> AssertionResult:
    return AssertionResult(name=name, kind=name, passed=False, expected="30 days", actual="no idea")


def Outcome(
    t: Transcript, results: list[AssertionResult] | None = None, error: str | None = None, **kw: Any
) -> GraphOutcome:
    return GraphOutcome(transcript=t, results=results or [], error=error, **kw)


def transcript(run_id: str, *texts: str) -> Transcript:
    turns = [Turn(role="user" if i % 2 == 0 else "agent", text=t) for i, t in enumerate(texts)]
    return Transcript(run_id=run_id, turns=turns)


class ScriptedPlacement:
    """A placement whose runs do what ``behave(spec, call_no)`` says; it records every call."""

    def __init__(self, behave: Callable[[RunSpec, int], Any] | None = None) -> None:
        self.behave = behave or (lambda spec, n: Outcome(transcript(spec.run_id, "hi", "hello"), [passed()]))
        self.calls: list[RunSpec] = []
        self.per_run: Counter[str] = Counter()

    async def run(self, spec: RunSpec, **kw: Any) -> Any:
        self.calls.append(spec)
        self.per_run[spec.run_id] += 1
        out = self.behave(spec, self.per_run[spec.run_id])
        if asyncio.iscoroutine(out):
            out = await out
        if isinstance(out, BaseException):
            raise out
        return out


class Barrier:
    """Holds each run until ``expected`` runs are in flight together (or every run has started).

    The scheduler must reach its limit for the test to finish; peaks above it are recorded.
    """

    def __init__(self, expected: int, total: int) -> None:
        self.expected, self.total = expected, total
        self.in_flight: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()
        self.started: Counter[str] = Counter()
        self.cond = asyncio.Condition()

    def key(self, spec: RunSpec) -> str:
        return spec.target_name

    def release(self) -> bool:
        return self.in_flight["all"] >= self.expected or self.started["all"] == self.total

    async def enter(self, key: str) -> None:
        async with self.cond:
            self.started["all"] += 1
            self.started[key] += 1
            self.in_flight["all"] += 1
            self.in_flight[key] += 1
            for k in ("all", key):
                self.peak[k] = max(self.peak[k], self.in_flight[k])
            self.cond.notify_all()
            await self.cond.wait_for(self.release)
            self.in_flight["all"] -= 1
            self.in_flight[key] -= 1

    async def __call__(self, spec: RunSpec, n: int) -> GraphOutcome:
        await self.enter(self.key(spec))
        return Outcome(transcript(spec.run_id, "hi", "ok"), [passed()])


class Events(Reporter):
    def __init__(self) -> None:
        self.log: list[str] = []

    def started(self, total: int) -> None:
        self.log.append(f"started {total}")

    def run_finished(self, result: RunResult) -> None:
        self.log.append(f"{result.run_id}:{result.outcome}:{result.attempt}")

    def note(self, text: str) -> None:
        self.log.append(f"note {text}")


async def schedule(placement: Any, specs: list[RunSpec], **kw: Any) -> Any:
    return await asyncio.wait_for(Scheduler(placement, **kw).run(specs), WAIT)


@pytest.mark.unit
async def test_global_concurrency_is_reached_and_never_exceeded() -> None:
    specs = [make_spec(f"t{i}") for i in range(20)]
    barrier = Barrier(expected=3, total=20)
    out = await schedule(ScriptedPlacement(barrier), specs, concurrency=3)
    assert barrier.peak["all"] == 3
    assert [r.outcome for r in out.results] == ["passed"] * 20


@pytest.mark.unit
async def test_per_target_limit_does_not_block_other_targets() -> None:
    specs = [make_spec(f"a{i}", target="slow") for i in range(10)] + [
        make_spec(f"b{i}", target="fast") for i in range(10)
    ]

    class PerTarget(Barrier):
        def release(self) -> bool:
            """Once one target has started all its runs, the other alone cannot fill four slots."""
            return super().release() or 10 in (self.started["slow"], self.started["fast"])

    barrier = PerTarget(expected=4, total=20)
    await schedule(ScriptedPlacement(barrier), specs, concurrency=4, per_target=2)
    assert barrier.peak["slow"] == 2
    assert barrier.peak["fast"] == 2
    assert barrier.peak["all"] == 4


@pytest.mark.unit
async def test_retryable_error_is_retried_and_attempts_counted() -> None:
    def behave(spec: RunSpec, n: int) -> Any:
        if n == 1:
            refused = "connection refused at http://127.0.0.1:1"
            return Outcome(transcript(spec.run_id), [], refused, error_kind="agent", retryable=True)
        return Outcome(transcript(spec.run_id, "hi", "ok"), [passed()])

    placement = ScriptedPlacement(behave)
    out = await schedule(placement, [make_spec(retries=2)])
    assert [(r.outcome, r.attempt, r.final) for r in out.results] == [
        ("error", 1, False),
        ("passed", 2, True),
    ]
    assert out.results[0].error == "connection refused at http://127.0.0.1:1"
    assert len(placement.calls) == 2


@pytest.mark.unit
async def test_non_retryable_errors_and_failures_are_never_retried() -> None:
    def behave(spec: RunSpec, n: int) -> Any:
        if spec.test_id == "broken":
            return Outcome(transcript(spec.run_id), [], "HTTP 401 from the agent", error_kind="agent")
        return Outcome(transcript(spec.run_id, "hi", "no"), [failed()])

    placement = ScriptedPlacement(behave)
    out = await schedule(placement, [make_spec("broken", retries=3), make_spec("wrong", retries=3)])
    assert sorted((r.test_id, r.outcome, r.attempt) for r in out.results) == [
        ("broken", "error", 1),
        ("wrong", "failed", 1),
    ]
    assert placement.per_run == {"broken": 1, "wrong": 1}


@pytest.mark.unit
async def test_retries_stop_after_the_last_one_also_when_the_placement_raises() -> None:
    placement = ScriptedPlacement(lambda spec, n: TargetError(f"down {n}"))
    out = await schedule(placement, [make_spec(retries=2)])
    assert [(r.attempt, r.final, r.error) for r in out.results] == [
        (1, False, "down 1"),
        (2, False, "down 2"),
        (3, True, "down 3"),
    ]


@pytest.mark.unit
async def test_assertion_that_cannot_be_evaluated_makes_an_error() -> None:
    bad = AssertionResult(name="judge", kind="judge", passed=False, error=True, message="judge unusable")
    out = await schedule(
        ScriptedPlacement(lambda s, n: Outcome(transcript(s.run_id), [passed(), bad])), [make_spec()]
    )
    assert out.results[0].outcome == "error"
    assert out.results[0].error_kind == "assertion"


class HangingPlacement:
    """Records two turns, then hangs. Like the real graph it ends itself at ``timeout`` with the
    partial transcript, unless ``deaf``: then only the scheduler's backstop ends it (via the sink)."""

    def __init__(self, *, deaf: bool = False) -> None:
        self.deaf = deaf
        self.timeouts: list[float | None] = []

    async def run(self, spec: RunSpec, *, timeout: float | None = None, sink: Any = None, **kw: Any) -> Any:
        self.timeouts.append(timeout)
        partial = transcript(spec.run_id, "where is my order?", "let me check")
        try:
            await asyncio.wait_for(asyncio.Event().wait(), None if self.deaf else timeout)
        except asyncio.TimeoutError:
            return Outcome(partial, [], "the run took longer than 50ms", error_kind="timeout", retryable=True)
        except asyncio.CancelledError:
            sink(Outcome(partial, [], "cancelled", error_kind="cancelled"))
            raise


@pytest.mark.unit
@pytest.mark.parametrize("deaf", [False, True])
async def test_timeout_is_an_error_that_keeps_the_partial_transcript(
    tmp_path: Path, deaf: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(attempt_module, "BACKSTOP", 0.05)
    store = ResultsStore.create(tmp_path, suites=["s"], settings={})
    placement = HangingPlacement(deaf=deaf)
    out = await schedule(placement, [make_spec(timeout=0.05)], store=store)
    assert placement.timeouts == [0.05]
    result = out.results[0]
    assert result.outcome == "error"
    assert result.error == "timed out after 50ms"
    assert result.error_kind == "timeout"
    assert result.turns == 1
    saved = read_transcript(store.dir, result)
    assert saved is not None
    assert [t.text for t in saved.turns] == ["where is my order?", "let me check"]


@pytest.mark.unit
def log_hook(stage: str) -> Hook:
    return Hook(
        command=f'echo "{stage} $TAMESU_SUITE $TAMESU_TEST $TAMESU_SESSION {{{{vars.who}}}}" >> hooks.log'
    )


@pytest.mark.integration
async def test_hooks_run_in_order_with_the_run_env(tmp_path: Path) -> None:
    setup = SuiteSetup(
        name="s",
        dir=tmp_path,
        before_all=[log_hook("before_all")],
        before_each=[log_hook("before_each")],
        after_each=[log_hook("after_each")],
        after_all=[log_hook("after_all")],
        scope=Scope({"vars": {"who": "suite"}}),
    )
    placement = ScriptedPlacement()
    specs = [make_spec("one", vars={"who": "one"}), make_spec("two", vars={"who": "two"})]
    await schedule(placement, specs, concurrency=1, suites={"/suites/s.yaml": setup})
    sessions = [spec.session for spec in placement.calls]
    lines = (tmp_path / "hooks.log").read_text().splitlines()
    assert lines == [
        "before_all s   suite",
        f"before_each s one {sessions[0]} one",
        f"after_each s one {sessions[0]} one",
        f"before_each s two {sessions[1]} two",
        f"after_each s two {sessions[1]} two",
        "after_all s   suite",
    ]


@pytest.mark.integration
async def test_before_all_failure_errors_every_run_without_running_it(tmp_path: Path) -> None:
    setup = SuiteSetup(
        name="s",
        dir=tmp_path,
        before_all=[Hook(command="echo seed failed >&2; exit 7")],
        after_all=[Hook(command="touch torn-down")],
    )
    other = make_spec("elsewhere", suite="other")
    placement = ScriptedPlacement()
    events = Events()
    out = await schedule(
        placement,
        [make_spec("a"), make_spec("b", retries=2), other],
        suites={"/suites/s.yaml": setup},
        reporter=events,
    )
    by_test = {r.test_id: r for r in out.results}
    assert [c.test_id for c in placement.calls] == ["elsewhere"]
    assert by_test["elsewhere"].outcome == "passed"
    for name in ("a", "b"):
        assert by_test[name].outcome == "error"
        assert by_test[name].error.startswith("before_all hook failed: command echo seed failed")
        assert "exited with status 7: seed failed" in by_test[name].error
    assert len(out.results) == 3
    assert (tmp_path / "torn-down").exists()
    assert any(line.startswith("note suite s: before_all hook failed") for line in events.log)


@pytest.mark.integration
async def test_before_each_failure_is_a_retryable_error_and_after_each_failure_is_only_noted(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "first-done"
    setup = SuiteSetup(
        name="s",
        dir=tmp_path,
        before_each=[Hook(command=f"test -e {marker} || {{ touch {marker}; exit 1; }}")],
        after_each=[Hook(command="exit 2")],
    )
    events = Events()
    out = await schedule(
        ScriptedPlacement(), [make_spec(retries=1)], suites={"/suites/s.yaml": setup}, reporter=events
    )
    assert [(r.outcome, r.attempt) for r in out.results] == [("error", 1), ("passed", 2)]
    assert out.results[0].error.startswith("before_each hook failed: command test -e")
    assert any("after_each hook failed" in line for line in events.log)


@pytest.mark.unit
async def test_repeats_and_pass_threshold_make_the_verdict() -> None:
    def behave(spec: RunSpec, n: int) -> Outcome:
        ok = spec.repeat_index != 1
        return Outcome(transcript(spec.run_id), [passed() if ok else failed()])

    lenient = [make_spec("lenient", repeat=i, repeats=3, pass_threshold=0.67) for i in range(3)]
    strict = [make_spec("strict", repeat=i, repeats=3) for i in range(3)]
    out = await schedule(ScriptedPlacement(behave), lenient + strict)
    tests = {v.test_id: v for v in verdicts(lenient + strict, out.results)}
    assert tests["lenient"].verdict == "passed"
    assert tests["lenient"].pass_count == "2/3 passed, threshold 0.67"
    assert tests["strict"].verdict == "failed"
    assert tests["strict"].pass_count == "2/3 passed"
    assert exit_code(tests.values()) == 1


@pytest.mark.unit
async def test_quarantined_test_does_not_fail_the_invocation() -> None:
    specs = [make_spec("flaky", quarantine="SUP-412 flaky"), make_spec("fine")]

    def behave(s: RunSpec, n: int) -> GraphOutcome:
        return Outcome(transcript(s.run_id), [failed() if s.test_id == "flaky" else passed()])

    out = await schedule(ScriptedPlacement(behave), specs)
    results = {r.test_id: r for r in out.results}
    assert results["flaky"].outcome == "quarantined"
    assert results["flaky"].quarantine == "SUP-412 flaky"
    tests = {v.test_id: v for v in verdicts(specs, out.results)}
    assert tests["flaky"].verdict == "quarantined"
    assert exit_code(tests.values()) == 0


@pytest.mark.unit
async def test_exit_code_three_for_infrastructure_errors_only() -> None:
    specs = [make_spec("down"), make_spec("fine")]

    def behave(s: RunSpec, n: int) -> Any:
        return TargetError("refused") if s.test_id == "down" else Outcome(transcript(s.run_id), [passed()])

    out = await schedule(ScriptedPlacement(behave), specs)
    assert exit_code(verdicts(specs, out.results)) == 3
    assert exit_code(verdicts(specs[1:], out.results)) == 0


@pytest.mark.unit
async def test_results_are_appended_while_other_runs_are_still_going(tmp_path: Path) -> None:
    release = asyncio.Event()

    async def behave(spec: RunSpec, n: int) -> Outcome:
        if spec.test_id == "slow":
            await release.wait()
        return Outcome(transcript(spec.run_id, "hi", "ok"), [passed()])

    class Watch(Reporter):
        def __init__(self) -> None:
            self.fast_done = asyncio.Event()

        def run_finished(self, result: RunResult) -> None:
            if result.test_id == "fast":
                self.fast_done.set()

    store = ResultsStore.create(tmp_path, suites=["s"], settings={})
    watch = Watch()
    task = asyncio.create_task(
        Scheduler(ScriptedPlacement(behave), store=store, reporter=watch).run(
            [make_spec("slow"), make_spec("fast")]
        )
    )
    await asyncio.wait_for(watch.fast_done.wait(), WAIT)
    lines = (store.dir / "results.jsonl").read_text().splitlines()
    assert [json.loads(line)["test_id"] for line in lines] == ["fast"]
    assert not task.done()
    release.set()
    await asyncio.wait_for(task, WAIT)
    assert len((store.dir / "results.jsonl").read_text().splitlines()) == 2


@pytest.mark.unit
async def test_a_stalled_disk_holds_no_run_slot_and_nothing_counts_before_it_is_durable(
    tmp_path: Path,
) -> None:
    disk = threading.Event()

    class StalledStore(ResultsStore):
        def append_transcripts(self, items: Any) -> None:
            disk.wait(WAIT)
            super().append_transcripts(items)

    store = StalledStore(ResultsStore.create(tmp_path, suites=["s"], settings={}).dir)
    last_ran = asyncio.Event()

    def behave(spec: RunSpec, n: int) -> GraphOutcome:
        if spec.run_id == "t3":
            last_ran.set()
        return Outcome(transcript(spec.run_id, "hi", "ok"), [passed()])

    placement = ScriptedPlacement(behave)
    events = Events()
    task = asyncio.create_task(
        Scheduler(placement, concurrency=1, store=store, reporter=events).run(
            [make_spec(f"t{i}") for i in range(4)]
        )
    )
    # with concurrency 1, every run goes ahead while the disk stalls on the first transcript
    await asyncio.wait_for(last_ran.wait(), WAIT)
    assert events.log == ["started 4"], "no result counts before it is on disk"
    assert (store.dir / "results.jsonl").read_text() == ""
    disk.set()
    out = await asyncio.wait_for(task, WAIT)
    assert [r.run_id for r in out.results] == ["t0", "t1", "t2", "t3"]
    lines = (store.dir / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["run_id"] for line in lines) == ["t0", "t1", "t2", "t3"]
    assert len(stored_lines(store.dir)) == 4


class FullStore(ResultsStore):
    """A results store on a full disk; ``gate``, when given, holds the first write until it is set."""

    gate: threading.Event | None = None

    def append_many(self, results: Any) -> None:
        if self.gate is not None:
            assert self.gate.wait(WAIT), "the gate was never opened"
        raise OSError(28, "No space left on device")


@pytest.mark.unit
@pytest.mark.parametrize(("unwritten", "concurrency"), [(1, 1), (2, 3)])
async def test_a_failing_disk_stops_the_invocation_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unwritten: int, concurrency: int
) -> None:
    monkeypatch.setattr(scheduler_module, "MAX_UNWRITTEN", unwritten)
    store = FullStore(ResultsStore.create(tmp_path, suites=["s"], settings={}).dir)
    placement = ScriptedPlacement()
    specs = [make_spec(f"t{i}") for i in range(50)]
    with pytest.raises(OSError, match="No space left"):
        await schedule(placement, specs, concurrency=concurrency, store=store)
    # however fast the writer thread fails, runs go on only while it works: at most the attempts
    # waiting to be written plus one finished attempt per slot waiting for room, then nothing more
    ran = [spec.run_id for spec in placement.calls]
    assert 1 <= len(ran) <= unwritten + concurrency
    assert ran == [spec.run_id for spec in specs[: len(ran)]]


@pytest.mark.unit
async def test_runs_go_on_while_the_disk_writes_up_to_the_unwritten_bound_and_no_further(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unwritten, concurrency = 3, 2
    monkeypatch.setattr(scheduler_module, "MAX_UNWRITTEN", unwritten)
    store = FullStore(ResultsStore.create(tmp_path, suites=["s"], settings={}).dir)
    store.gate = threading.Event()
    bound = unwritten + concurrency

    def behave(spec: RunSpec, n: int) -> GraphOutcome:
        # the disk answers only once the scheduler has run as far as the bound allows
        if len(placement.calls) == bound:
            store.gate.set()  # type: ignore[union-attr]
        return Outcome(transcript(spec.run_id, "hi", "ok"), [passed()])

    placement = ScriptedPlacement(behave)
    with pytest.raises(OSError, match="No space left"):
        await schedule(
            placement, [make_spec(f"t{i}") for i in range(50)], concurrency=concurrency, store=store
        )
    assert [spec.run_id for spec in placement.calls] == [f"t{i}" for i in range(bound)]


@pytest.mark.unit
async def test_budget_stops_new_runs_and_lets_in_flight_ones_finish() -> None:
    def behave(spec: RunSpec, n: int) -> Outcome:
        t = transcript(spec.run_id)
        t.metrics["llm_cost_usd"] = 0.6
        return Outcome(t, [passed()])

    specs = [make_spec(f"t{i}") for i in range(10)]
    placement = ScriptedPlacement(behave)
    out = await schedule(placement, specs, concurrency=1, budget=Budget(max_cost_usd=1.0))
    assert len(placement.calls) == 2
    assert out.budget_exceeded and "max_cost_usd" in out.budget_exceeded
    assert exit_code(verdicts(specs, out.results), budget_exceeded=True) == 4


@pytest.mark.unit
async def test_budget_exceeded_raised_by_a_run_stops_scheduling() -> None:
    placement = ScriptedPlacement(lambda s, n: BudgetExceeded("judge spend reached $2"))
    out = await schedule(placement, [make_spec(f"t{i}", retries=3) for i in range(5)], concurrency=1)
    assert len(placement.calls) == 1
    assert out.results[0].error_kind == "budget"
    assert out.budget_exceeded == "judge spend reached $2"


@pytest.mark.unit
async def test_interrupt_keeps_what_finished_and_cancels_the_rest(tmp_path: Path) -> None:
    hang = asyncio.Event()
    store = ResultsStore.create(tmp_path, suites=["s"], settings={})

    async def behave(spec: RunSpec, n: int) -> Outcome:
        if spec.test_id != "quick":
            await hang.wait()
        return Outcome(transcript(spec.run_id), [passed()])

    class Interrupting(Reporter):
        def run_finished(self, result: RunResult) -> None:
            scheduler.interrupt()

    scheduler = Scheduler(ScriptedPlacement(behave), concurrency=3, store=store, reporter=Interrupting())
    specs = [make_spec("stuck1"), make_spec("quick"), make_spec("stuck2"), make_spec("never")]
    out = await asyncio.wait_for(scheduler.run(specs), WAIT)
    assert out.interrupted
    assert [r.test_id for r in out.results] == ["quick"]
    assert [r.test_id for r in store.finished()] == ["quick"]
    assert exit_code(verdicts(specs, out.results), interrupted=True) == 130


@pytest.mark.unit
async def test_fail_fast_stops_after_the_first_failure() -> None:
    placement = ScriptedPlacement(lambda s, n: Outcome(transcript(s.run_id), [failed()]))
    out = await schedule(placement, [make_spec(f"t{i}") for i in range(5)], concurrency=1, fail_fast=True)
    assert len(placement.calls) == 1
    assert out.stopped_early


@pytest.mark.unit
async def test_results_and_transcripts_are_redacted(tmp_path: Path) -> None:
    redactor = Redactor()
    redactor.add("sk-live-123456")

    def behave(spec: RunSpec, n: int) -> Outcome:
        bad = AssertionResult(
            name="not_contains", kind="not_contains", passed=False, actual="token sk-live-123456"
        )
        return Outcome(transcript(spec.run_id, "hi", "your key is sk-live-123456"), [bad])

    store = ResultsStore.create(tmp_path, suites=["s"], settings={})
    out = await schedule(ScriptedPlacement(behave), [make_spec()], store=store, redactor=redactor)
    assert out.results[0].assertions[0].actual == "token ***"
    files = [store.dir / "results.jsonl", store.dir / out.results[0].transcript_file]
    for f in files:
        assert "sk-live-123456" not in f.read_text()
    assert "your key is ***" in files[1].read_text()


TWO_TARGETS = """
suite: two-targets
targets:
  slow: {{ type: rest, url: "{url}/slow", request: {{ body: {{ message: "{{{{message}}}}" }} }}, response: {{ text: $.reply }} }}
  fast: {{ type: rest, url: "{url}/fast", request: {{ body: {{ message: "{{{{message}}}}" }} }}, response: {{ text: $.reply }} }}
tests:
  - name: to slow
    target: slow
    repeat: 8
    scenario: {{ max_turns: 1, script: [ {{ say: "hi" }} ] }}
    assert: [ {{ contains: "ok" }} ]
  - name: to fast
    target: fast
    repeat: 8
    scenario: {{ max_turns: 1, script: [ {{ say: "hi" }} ] }}
    assert: [ {{ contains: "ok" }} ]
"""


@pytest.mark.integration
async def test_limits_hold_against_a_real_agent_through_the_local_placement(tmp_path: Path) -> None:
    """16 runs (8 per target) at concurrency 4 and per-target 2, counted by the agent itself."""
    from aiohttp import web

    from tamesu.actors.services import RunServices
    from tamesu.config.loader import load_suite
    from tamesu.runner.placement.local import LocalPlacement
    from tamesu.runner.plan import plan

    class Agent(Barrier):
        def release(self) -> bool:
            return super().release() or 8 in (self.started["/slow"], self.started["/fast"])

    agent = Agent(expected=4, total=16)

    async def chat(request: web.Request) -> web.Response:
        await agent.enter(request.path)
        return web.json_response({"reply": "ok"})

    app = web.Application()
    app.router.add_post("/{tail:.*}", chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    services = RunServices.create()
    try:
        suite = tmp_path / "suite.yaml"
        suite.write_text(TWO_TARGETS.format(url=f"http://127.0.0.1:{runner.addresses[0][1]}"))
        specs = plan(load_suite(suite, project=False))
        store = ResultsStore.create(tmp_path / "runs", suites=["two-targets"], settings={})
        out = await schedule(LocalPlacement(services), specs, concurrency=4, per_target=2, store=store)
    finally:
        await services.aclose()
        await runner.cleanup()
    assert [r.outcome for r in out.results] == ["passed"] * 16
    assert agent.peak["/slow"] == 2 and agent.peak["/fast"] == 2
    assert agent.peak["all"] == 4
    assert len(store.finished()) == 16


@pytest.mark.unit
def test_session_ids_are_random_version_4_uuids() -> None:
    import uuid

    ids = [session_id(make_spec(), None) for _ in range(200)]
    parsed = [uuid.UUID(i) for i in ids]
    assert all(str(p) == i for p, i in zip(parsed, ids, strict=True))
    assert {p.version for p in parsed} == {4} and {p.variant for p in parsed} == {uuid.RFC_4122}
    assert len(set(ids)) == len(ids)


@pytest.mark.unit
async def test_a_placement_that_fails_when_called_is_an_infrastructure_error() -> None:
    class Broken:
        bounds_itself = True

        def run(self, spec: RunSpec, **_: Any) -> Any:
            raise TargetError("no worker left", retryable=False)

    outcome = await Scheduler(Broken()).run([make_spec()])
    [result] = outcome.results
    assert result.outcome == "error" and result.error == "no worker left"


@pytest.mark.unit
async def test_a_lost_cluster_stops_the_invocation_and_records_only_what_finished(tmp_path: Path) -> None:
    from tamesu.errors import ClusterLost

    gone = asyncio.Event()

    async def behave(spec: RunSpec, n: int) -> Any:
        if spec.run_id in ("t0", "t1"):
            return Outcome(transcript(spec.run_id, "hi", "hello"), [passed()])
        if spec.run_id == "t2":
            await gone.wait()
            return ClusterLost("10.0.0.1:6379", silent_for=10)
        gone.set()
        return ClusterLost("10.0.0.1:6379", silent_for=10)

    store = ResultsStore.create(tmp_path, suites=["s"], settings={})
    placement = ScriptedPlacement(behave)
    with pytest.raises(ClusterLost, match=r"10\.0\.0\.1:6379"):
        await schedule(
            placement, [make_spec(f"t{i}", retries=2) for i in range(20)], concurrency=2, store=store
        )
    assert sorted(r.run_id for r in store.finished()) == ["t0", "t1"]
    assert len(placement.calls) <= 4
