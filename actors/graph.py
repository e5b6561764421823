"""The graph of one run: simulator -> target -> recorder -> simulator, wired and driven.

The graph does not grade: once a run ends without an error it awaits ``then`` with what it
``Played``, still within the run's time limit and while its remote agents are served, and the
runner (``tamesu.runner.grading``) measures and grades there, in the process the graph runs in.

``RunGraph.run`` never raises for anything the run itself does: an unreachable agent, an adapter
bug, a simulator without a model all become an error (redacted) in its ``outcome()``. It is
cancellation-safe: the adapter is always stopped, and the transcript recorded so far survives:

- ``timeout=``: the graph enforces the run's time limit itself and ends the run with
  ``error_kind="timeout"`` and the partial transcript (``end_reason="timeout"``). This is the way
  placements use, since it also works inside a Ray worker.
- when the caller cancels the run (its own timeout, Ctrl-C), the run ends with
  ``error_kind="cancelled"`` before ``CancelledError`` propagates, and ``outcome()`` holds the
  partial transcript.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from tamesu.clock import within
from tamesu.durations import format_duration, parse_duration
from tamesu.kernel.events import RunError
from tamesu.kernel.messages import ErrorMsg
from tamesu.kernel.outcome import AssertionResult, GraphOutcome
from tamesu.kernel.transcript import Transcript
from tamesu.run_spec import new_session
from tamesu.secrets import SecretStore
from tamesu.speech_pool import MeteredSpeech
from tamesu.templates import Scope
from tamesu.untrusted import json_bytes
from tamesu.users.simulator import UserSimulator, make_simulator
from tamesu.wire.faults import AgentFaults

from .actor import Actor, drive, error_message, roundtrip
from .played import Played
from .recorder import Recorder
from .simulator_actor import SimulatorActor
from .target_actor import TargetActor

if TYPE_CHECKING:
    from tamesu.models.router import ModelRouter
    from tamesu.models.usage import UsageLedger
    from tamesu.run_spec import RunSpec
    from tamesu.secrets import Redactor
    from tamesu.targets.base import TargetAdapter, TargetContext

    from .services import RunServices

__all__ = ["DEFAULT_MAX_TURNS", "GraphOutcome", "Played", "Ready", "RunGraph", "Then", "run_graph"]

DEFAULT_MAX_TURNS = 10
STOP_GRACE = 5.0
"""Seconds the actors get to stop (close the adapter) once the run is over."""


Ready = Callable[[dict[str, str]], Awaitable[str | None]]
"""Called once a run's remote agents are served, with their template values (``remote.NAME.url``
...; empty without remote agents), before its target starts; returns why the run cannot go on."""
Then = Callable[[Played], Awaitable[None]]
"""Awaited once a run ended without an error, within its time limit and while its remote agents
are served: the runner grades it there (``tamesu.runner.grading``)."""


class RunGraph:
    """One run's actors, wired and driven; ``outcome()`` is readable at any time, also mid-run."""

    def __init__(
        self,
        spec: RunSpec,
        services: RunServices,
        *,
        secrets: Mapping[str, str] | None = None,
        simulator: UserSimulator | None = None,
        encode_boundary: bool = False,
        maxsize: int = 64,
    ) -> None:
        self.spec = spec
        self.services = services
        self.speech = MeteredSpeech(services.speech)
        """The run's view of the speech pool: what it asked of each engine, for its cost."""
        self.secrets = dict(secrets or {})
        for value in self.secrets.values():
            services.redactor.add(value)
        self.clock = services.clock_factory()
        self.transcript = Transcript(
            run_id=spec.run_id,
            test=spec.test_id,
            target=spec.target_name,
            started_at=float(getattr(self.clock, "started_wall", 0.0)),
        )
        self._secrets = _Secrets(spec, services, self.secrets)
        self.scope = Scope({"vars": spec.vars}, resolvers={"secrets": self._secrets})
        self._simulator = simulator
        self._opts: dict[str, Any] = {
            "maxsize": maxsize,
            "boundary": roundtrip if encode_boundary else None,
            "redactor": services.redactor,
        }
        self.recorder = Recorder(
            self.transcript,
            scope=self.scope,
            clock=self.clock,
            captures=list(getattr(spec.test, "capture", None) or []),
            handoff_signal=getattr(spec.target, "handoff", None),
            limits=spec.limits,
            **self._opts,
        )
        self.adapter: TargetAdapter | None = None
        self.faults = AgentFaults()
        """The agent's faults its connect policy retried; the run's own agent error is added in ``outcome``."""
        self.router: ModelRouter | None = None
        self.ledger = _new_ledger()
        self._error: ErrorMsg | None = None

    async def run(
        self, *, timeout: float | None = None, ready: Ready | None = None, then: Then | None = None
    ) -> None:
        """Drive the run to its end (or to ``timeout`` seconds); ``outcome()`` then tells how it
        went. The run's remote agents are served first; then ``ready`` (the run's ``before_each``
        hooks, which may name their URLs) is awaited, and an error it returns fails the run as a
        hook error. A run that ended without an error is handed to ``then`` (see ``Then``)."""
        cannot = self.spec.cannot_run
        if cannot is not None:
            self._fail(cannot[0], cannot[1], False)
            return
        remote = None
        try:
            if (
                self.spec.remote_agents
                or self._suite_agents() is not None
                or self.spec.held_by_driver is not None
            ):
                try:
                    remote = await self._serve_remote_agents()
                except Exception as exc:
                    self._fail_exc(exc)
            if ready is not None and self._error is None:
                problem = await ready(dict(remote.values) if remote is not None else {})
                if problem is not None:
                    self._fail(problem, "hook", True)
            if self._error is None:
                await within(self._run_actors(then), timeout)
        except asyncio.TimeoutError:
            self._fail(f"the run took longer than {format_duration(timeout or 0)}", "timeout", True)
        except asyncio.CancelledError:
            self._fail("the run was cancelled", "cancelled", True)
            raise
        finally:
            if remote is not None:
                await remote.close()

    @property
    def error(self) -> ErrorMsg | None:
        """Why the run failed, so far (None: it did not, or not yet)."""
        return self._error or self.recorder.error

    def played(self) -> Played:
        """What the run recorded so far, for grading to measure (the adapter's own checks are
        handed to ``then`` alone, once the run ended)."""
        return Played(
            transcript=self.transcript,
            scope=self.scope,
            router=self.router,
            ledger=self.ledger,
            reported_metrics=self.recorder.reported_metrics,
            speech=self.speech,
        )

    def outcome(self, results: Sequence[AssertionResult] = (), *, final: bool = False) -> GraphOutcome:
        """The outcome so far with grading's ``results``, redacted: mid-run it holds the partial
        transcript. ``final``: the run was graded, so nothing will change it any more."""
        error = self.error
        self.transcript.agent_faults = self.faults.total(self._agents_fault(error))
        redactor = self.services.redactor
        if final and not redactor.found_in_json(self._encoded(results)):
            # final and free of secrets: nothing will change it, so no copy is needed
            transcript, kept = self.transcript, list(results)
        else:
            transcript = _redacted_copy(self.transcript, Transcript, redactor)
            kept = [_redacted_copy(r, AssertionResult, redactor) for r in results]
        return GraphOutcome(
            transcript=transcript,
            results=kept,
            error=None if error is None else redactor.redact(error.message),
            error_kind=None if error is None else error.kind,
            retryable=False if error is None else error.retryable,
            retry_after=None if error is None else error.retry_after,
        )

    def _agents_fault(self, error: ErrorMsg | None) -> str | None:
        """The run's error when the agent caused it: an agent error, or the run's time running out
        while the agent owed an answer (the last turn is the user's)."""
        if error is None:
            return None
        if error.kind in ("agent", "capacity"):
            return error.message
        turns = self.transcript.turns
        if error.kind == "timeout" and turns and turns[-1].role == "user":
            return f"timed out waiting for the agent: {error.message}"
        return None

    def _encoded(self, results: Sequence[AssertionResult]) -> bytes:
        """The transcript and results as JSON text, to look for secrets in (none: nothing to do)."""
        if not self.services.redactor:
            return b""
        return json_bytes((self.transcript, results), enc_hook=str)

    def _fail(self, message: str, kind: str, retryable: bool, retry_after: float | None = None) -> None:
        if self._error is None and self.recorder.error is None:
            self._error = ErrorMsg(
                message=message, kind=kind, retryable=retryable, retry_after=retry_after, at=self.clock.now()
            )
            self.transcript.events.append(RunError(at=self.clock.now(), kind=kind, message=message))
        self.recorder.finish("error" if kind not in ("timeout", "cancelled") else kind)

    def _fail_exc(self, exc: BaseException, *, kind: str | None = None) -> None:
        msg = error_message(exc, redactor=self.services.redactor, at=self.clock.now())
        self._fail(msg.message, kind or msg.kind, msg.retryable, msg.retry_after)

    def _build(self) -> list[Actor]:
        """Session id, adapter, simulator and the actors around them; raises on a bad configuration."""
        from tamesu.targets.base import TargetContext

        spec, target = self.spec, self.spec.target
        session = spec.session or new_session(target, self.scope)
        self.scope.set("session", session)
        self.transcript.session = session
        self.router = self.services.router_for(spec.models)
        self.recorder.router, self.recorder.ledger = self.router, self.ledger
        ctx = TargetContext(
            name=spec.target_name,
            run_id=spec.run_id,
            session=session,
            scope=self.scope,
            clock=self.clock,
            http=self.services.http,
            redactor=self.services.redactor,
            turn_timeout=_turn_timeout(target),
            suite_dir=spec.suite_dir,
            models=self.router,
            ledger=self.ledger,
            fuzz=dict(getattr(spec.test, "fuzz_tools", None) or {}),
            limits=spec.limits,
            faults=self.faults,
            speech=self.speech,
            test=spec.test,
            language=spec.language,
            seed=spec.seed,
            run_timeout=spec.timeout,
            output_dir=self.services.output_dir,
            update_golden=self.services.update_golden,
            max_goal_steps=spec.max_goal_steps,
            detect_dtmf=any(named.kind == "dtmf_received" for named in spec.assertions),
            shared_delegates=self._suite_agents() is not None or self.spec.held_by_driver is not None,
            sip=spec.sip,
            livekit=spec.livekit,
            stt_engine=spec.stt_engine,
        )
        self.adapter = _adapter(target, ctx)
        counterpart = self._counterpart(ctx)
        simulator = self._simulator or self._make_simulator(counterpart)
        scenario = getattr(spec.test, "scenario", None)
        max_turns = getattr(scenario, "max_turns", None) or DEFAULT_MAX_TURNS
        replay = getattr(scenario, "replay", None)
        if replay is not None:
            max_turns = len(replay.turns) + 1  # replayed whole; the user then ends it as done
        target_actor = TargetActor(
            self.adapter, clock=self.clock, run_id=spec.run_id, session=session, **self._opts
        )
        # a simulator done with the transcript before it returns reads the one being recorded
        reads_at_once = getattr(simulator, "reads_at_once", False)
        sim_actor = SimulatorActor(
            simulator,
            transcript=self.recorder.live if reads_at_once else self.recorder.snapshot,
            clock=self.clock,
            max_turns=max_turns,
            agent_speaks_first=self.adapter.agent_speaks_first,
            hears_unprompted=lambda: self.adapter is not None and self.adapter.hears_unprompted,
            counterpart=counterpart,
            **self._opts,
        )
        sim_actor.connect(target_actor)
        target_actor.connect(self.recorder)
        self.recorder.connect(sim_actor)
        return [sim_actor, target_actor, self.recorder]

    def _counterpart(self, ctx: TargetContext) -> TargetAdapter | None:
        """The adapter of the agent that plays the user (``counterpart:``), in a scope of its own."""
        spec = self.spec
        counterpart = getattr(spec.test, "counterpart", None)
        if counterpart is None or spec.counterpart_target is None:
            return None
        scope = self.scope.child()
        session = new_session(spec.counterpart_target, scope)
        scope.set("session", session)
        cp_ctx = replace(
            ctx,
            name=counterpart.target,
            session=session,
            scope=scope,
            turn_timeout=_turn_timeout(spec.counterpart_target),
            fuzz={},
            faults=AgentFaults(),
            output_dir=None,
            counterpart=True,
        )
        return _adapter(spec.counterpart_target, cp_ctx)

    def _make_simulator(self, counterpart: TargetAdapter | None) -> UserSimulator:
        return make_simulator(
            self.spec, self.scope, router=self.router, ledger=self.ledger, counterpart=counterpart
        )

    async def _serve_remote_agents(self) -> Any:
        """The run's remote agents before its target starts (``{{remote.NAME.url}}``): the suite's,
        served for its lifetime (the run takes its own exchanges from them), else its own."""
        from tamesu.remote_agents.exchanges import Recording
        from tamesu.remote_agents.run_agents import RemoteAgents
        from tamesu.remote_agents.suite_agents import AttachedRun

        held = self.spec.held_by_driver
        if held is not None:  # the driver serves them: their URLs here, the exchanges fetched at the end
            for key, value in held.values.items():
                self.scope.set(key, value)
            return _Held(held.values)
        suite = self._suite_agents()
        if suite is not None:
            run = AttachedRun(
                self.spec.run_id,
                Recording(self.transcript, self.clock, self.spec.limits),
                self.transcript,
                self._contexts,
            )
            for key, value in suite.attach(run).items():
                self.scope.set(key, value)
            return _Attached(suite, self.spec.run_id)
        return await RemoteAgents.open(
            self.spec.remote_agents,
            scope=self.scope,
            transcript=self.transcript,
            clock=self.clock,
            limits=self.spec.limits,
            http=self.services.http,
        )

    async def _fetch_exchanges(self) -> None:
        """A held run's messages to and from the suite's remote agents, fetched from the driver and
        placed on this run's clock, before it is graded."""
        from msgspec.structs import replace as with_fields

        from tamesu.remote_agents.suite_agents import fetch_exchanges

        held = self.spec.held_by_driver
        if held is None:
            return
        try:
            events = await fetch_exchanges(held, self.spec.run_id, http=self.services.http)
        except Exception as exc:
            self._fail(
                f"cannot fetch the run's remote agent messages from the driver: {exc}", "internal", True
            )
            return
        wall = float(getattr(self.clock, "started_wall", 0.0))
        self.transcript.events.extend(with_fields(e, at=max(0.0, e.at - wall)) for e in events)

    def _suite_agents(self) -> Any:
        """The suite's remote agents served in this process for its lifetime, if any."""
        if not self.spec.suite_path:
            return None
        from tamesu.remote_agents.suite_agents import SuiteRemoteAgents

        return SuiteRemoteAgents.of(self.spec.suite_path)

    def _contexts(self) -> set[str]:
        """The run's context with the agent under test (an A2A target's), and its session id."""
        found = {self.transcript.session} if self.transcript.session else set()
        context = getattr(self.adapter, "context_id", None)
        if isinstance(context, str) and context:
            found.add(context)
        return found

    async def _run_actors(self, then: Then | None) -> None:
        try:
            actors = self._build()
        except _ConfigProblem as exc:
            self._fail(str(exc), "config", False)
            return
        except Exception as exc:
            self._fail_exc(exc)
            return
        own = [a for a in actors if not a.drivable]
        tasks = [asyncio.create_task(a.run(), name=f"{self.spec.run_id}:{a.name}") for a in own]
        begun: list[Actor] = []
        try:
            await drive([a for a in actors if a.drivable], begun=begun, other_tasks=bool(own))
            died = next((a.died for a in actors if a.died is not None), None)
            if died is not None:
                self._fail_exc(died, kind="internal")
            elif not self.recorder.finished.is_set():
                await self._converse(tasks)
        finally:
            await _shutdown(tasks, begun)
            for actor in actors:
                # the actors form a ring (simulator -> target -> recorder -> simulator): unlinked,
                # a finished run is freed at once rather than left to the cycle collector
                actor.outputs.clear()
        if self._error is not None or self.recorder.error is not None:
            return
        await self._fetch_exchanges()
        if self._error is not None or then is None:
            return
        checks = self.adapter.results() if self.adapter is not None else []
        await then(replace(self.played(), adapter_results=checks))

    async def _converse(self, tasks: list[asyncio.Task[None]]) -> None:
        """Wait for the recorder to see the session end; an actor that dies first is an internal error."""
        if not tasks:
            self._fail("the run's actors stopped before the session ended", "internal", False)
            return
        finished = asyncio.create_task(self.recorder.finished.wait())
        pending: set[asyncio.Task[Any]] = set(tasks)
        try:
            while not self.recorder.finished.is_set():
                done, pending = await asyncio.wait({finished, *pending}, return_when=asyncio.FIRST_COMPLETED)
                pending.discard(finished)
                for task in done:
                    if task is not finished and not task.cancelled() and task.exception() is not None:
                        self._fail_exc(task.exception(), kind="internal")  # type: ignore[arg-type]
                        return
                if not pending and not self.recorder.finished.is_set():
                    self._fail("the run's actors stopped before the session ended", "internal", False)
                    return
        finally:
            finished.cancel()


async def run_graph(
    spec: RunSpec,
    services: RunServices,
    *,
    secrets: Mapping[str, str] | None = None,
    timeout: float | None = None,
    encode_boundary: bool = False,
) -> GraphOutcome:
    """Drive one spec to its outcome, ungraded: the transcript and any error, no metrics and no
    results (placements grade through ``tamesu.runner.grading``)."""
    graph = RunGraph(spec, services, secrets=secrets, encode_boundary=encode_boundary)
    await graph.run(timeout=timeout)
    return graph.outcome()


class _Secrets:
    """The ``secrets.NAME`` resolver of a run's scope: the run's own values, the services',
    then the suite's refs resolved on first use."""

    __slots__ = ("services", "spec", "store", "values")

    def __init__(self, spec: RunSpec, services: RunServices, values: dict[str, str]) -> None:
        self.spec = spec
        self.services = services
        self.values = values
        self.store: SecretStore | None = None

    def __call__(self, name: str) -> str:
        if name in self.values:
            return self.values[name]
        if name in self.services.secrets:
            return self.services.secrets[name]
        if self.store is None:
            spec = self.spec
            self.store = SecretStore(
                spec.secrets, redactor=self.services.redactor, base_dir=spec.suite_dir, vars=spec.vars
            )
        return self.store.get(name)


class _ConfigProblem(Exception):
    """The spec names something this process cannot run (an unknown target type)."""


def _adapter(target: Any, ctx: TargetContext) -> TargetAdapter:
    from tamesu.targets.base import targets

    if target.type not in targets or targets.get(target.type).adapter is None:
        raise _ConfigProblem(
            f"the {target.type} target type validates but has no adapter in this version of tamesu"
            f" (adapters: {', '.join(targets.with_adapter())})"
        )
    adapter: TargetAdapter = targets.adapter(target.type)(target, ctx)
    return adapter


def _turn_timeout(target: Any) -> float:
    value = getattr(target, "turn_timeout", None)
    return _seconds(value) if value else 60.0


_seconds = lru_cache(maxsize=256)(parse_duration)
"""Durations of a suite are few and asked for on every run."""


def _new_ledger() -> UsageLedger | None:
    """The run's own model usage (None where the model layer is not installed)."""
    global _ledger_class
    if _ledger_class is None:
        try:
            from tamesu.models.usage import UsageLedger
        except ImportError:
            _ledger_class = False
        else:
            _ledger_class = UsageLedger
    return _ledger_class() if _ledger_class else None


_ledger_class: Any = None
"""``UsageLedger`` once looked up (False: the model layer is not installed)."""


_T = TypeVar("_T")


def _redacted_copy(value: _T, cls: type[_T], redactor: Redactor) -> _T:
    """A deep copy with every secret value replaced; what a target put in raw responses that is
    not plain data is kept as its text."""
    return msgspec.convert(redactor.redact_obj(msgspec.to_builtins(value, enc_hook=str)), cls)


async def _shutdown(tasks: list[asyncio.Task[None]], driven: list[Actor]) -> None:
    """Cancel the actors' tasks and stop the driven actors, giving them ``STOP_GRACE`` seconds
    (an actor whose ``stop`` is the base one has nothing to stop)."""
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=STOP_GRACE)
    stopping = [actor for actor in driven if type(actor).stop is not Actor.stop]
    if stopping:
        with contextlib.suppress(asyncio.TimeoutError):
            await within(_stop_all(stopping), STOP_GRACE)


async def _stop_all(actors: list[Actor]) -> None:
    for actor in actors:
        with contextlib.suppress(Exception):
            await actor.stop()


class _Attached:
    """A run's hold on its suite's remote agents: ``close`` lets go (the agents stay served)."""

    def __init__(self, suite: Any, run_id: str) -> None:
        self.suite = suite
        self.run_id = run_id
        self.values: dict[str, str] = dict(suite.values)

    async def close(self) -> None:
        self.suite.detach(self.run_id)


class _Held:
    """A run's remote agents served by the driver: nothing to close here."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = dict(values)

    async def close(self) -> None:
        """The driver lets the run go when its placement answers."""
