"""A suite's remote agents, served once for the whole suite, and whose run each exchange is.

An agent under test is usually configured once (a long-running service told in ``before_all``
where its delegates are), so the suite's remote agents are served before ``before_all`` and
stopped after ``after_all``, at URLs that stay the same for every run: ``{{remote.NAME.url}}``
renders in every hook and in every target. Runs in flight share them, so each message is given
to the run it belongs to, the first rule that decides:

1. a context or task id already given to a run stays that run's;
2. a run whose A2A context with the agent under test (or whose session id) is the message's context;
3. the one run waiting for the agent under test's answer (its last turn is the user's);
4. the one run attached at all.

What none of them decides is recorded in no run (``delegated_to`` reads only its own run's) and
counted in ``unattributed``, which the scheduler reports. A run in this process (the local
placement) attaches its own transcript. A run in another process (a Ray worker) is held here
for it by the driver (``hold``): its exchanges are kept in a transcript of the driver's, stamped
in wall-clock time, and the worker fetches them (``HeldRun``, with the suite's own token)
before it grades the run.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
import weakref
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

    from tamesu.config.suite import RemoteAgent
    from tamesu.kernel.transcript import Transcript
    from tamesu.limits import Limits
    from tamesu.remote_agents.exchanges import Recording
    from tamesu.remote_agents.run_agents import RemoteAgents
    from tamesu.templates import Scope

__all__ = ["AttachedRun", "HeldRun", "SuiteRemoteAgents", "fetch_exchanges"]

MAX_IDS = 10_000
"""Context and task ids remembered per suite (the oldest are forgotten past it)."""


@dataclass(frozen=True)
class HeldRun:
    """What a run the driver holds carries to its worker (``RunSpec.held_by_driver``): the suite's
    agents' template values, and where to fetch the run's exchanges with them."""

    values: dict[str, str]
    url: str
    token: str


@dataclass
class AttachedRun:
    """One run in flight, as the suite's agents see it."""

    run_id: str
    recording: Recording
    transcript: Transcript
    contexts: Callable[[], set[str]]
    """The run's context ids with the agent under test (and its session id), read when needed."""

    def waiting(self) -> bool:
        turns = self.transcript.turns
        return bool(turns) and turns[-1].role == "user"


class SuiteRemoteAgents:
    """The remote agents of one suite; see the module docstring."""

    _all: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, SuiteRemoteAgents]] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self, suite_path: str) -> None:
        self.suite_path = suite_path
        self.served: RemoteAgents | None = None
        self.values: dict[str, str] = {}
        """``remote.NAME.url`` and the others, for every hook and target of the suite."""
        self.runs: dict[str, AttachedRun] = {}
        self.unattributed: Counter[str] = Counter()
        """Messages (by remote agent) that could not be told apart between runs in flight."""
        self._owner: dict[str, str] = {}
        self._held: dict[str, AttachedRun] = {}
        self._exchanges: tuple[Any, Any] | None = None
        self.exchanges_url = ""
        self.token = ""
        self.limits: Any = None

    @classmethod
    def of(cls, suite_path: str) -> SuiteRemoteAgents | None:
        """The suite's agents served in this event loop, if any."""
        return cls._all.get(asyncio.get_running_loop(), {}).get(suite_path)

    @classmethod
    async def open(
        cls,
        suite_path: str,
        agents: dict[str, RemoteAgent],
        *,
        scope: Scope,
        limits: Limits,
        http: httpx.AsyncClient,
    ) -> SuiteRemoteAgents:
        """Serve ``agents`` (their token, forward and headers rendered in the suite's ``scope``)
        and set their values in it."""
        from tamesu.remote_agents.run_agents import RemoteAgents

        suite = cls(suite_path)
        suite.served = await RemoteAgents.open(
            agents, scope=scope, recording=_Router(suite), limits=limits, http=http
        )
        suite.values = dict(suite.served.values)
        suite.limits = limits
        cls._all.setdefault(asyncio.get_running_loop(), {})[suite_path] = suite
        return suite

    async def _serve_exchanges(self) -> None:
        """The route a worker fetches a held run's exchanges from (``GET <url><run id>``, bearer token)."""
        from tamesu.remote_agents.server import Mount, RemoteServer

        self.token = secrets.token_urlsafe(24)
        server = RemoteServer.shared("127.0.0.1:0")
        mount = Mount(prefix=f"_tamesu-{secrets.token_hex(6)}", app=self._exchanges_app, token=self.token)
        await server.add(mount)
        self._exchanges = (server, mount)
        self.exchanges_url = f"{server.url}/{mount.prefix}/"

    async def _exchanges_app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        import msgspec

        run_id = scope["path"].rsplit("/", 1)[-1]
        held = self._held.get(run_id)
        events = msgspec.to_builtins(held.transcript.events) if held is not None else []
        body = json.dumps(events).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200 if held else 404, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def hold(self, run_id: str, session: str) -> HeldRun:
        """Attach a run of another process, its session id as its context; returns what it
        carries there."""
        from tamesu.kernel.transcript import Transcript
        from tamesu.remote_agents.exchanges import Recording

        if self._exchanges is None:
            await self._serve_exchanges()
        transcript = Transcript(run_id=run_id)
        run = AttachedRun(
            run_id, Recording(transcript, _WallClock(), self.limits), transcript, lambda: {session}
        )
        self._held[run_id] = run
        self.attach(run)
        return HeldRun(values=dict(self.values), url=self.exchanges_url, token=self.token)

    def release(self, run_id: str) -> None:
        self._held.pop(run_id, None)
        self.detach(run_id)

    async def close(self) -> None:
        servers = self._all.get(asyncio.get_running_loop(), {})
        if servers.get(self.suite_path) is self:
            del servers[self.suite_path]
        served, self.served = self.served, None
        if served is not None:
            await served.close()
        exchanges, self._exchanges = self._exchanges, None
        if exchanges is not None:
            await exchanges[0].remove(exchanges[1])

    def attach(self, run: AttachedRun) -> dict[str, str]:
        """Take the run's exchanges from now on; returns the values its scope gets."""
        self.runs[run.run_id] = run
        return dict(self.values)

    def detach(self, run_id: str) -> None:
        self.runs.pop(run_id, None)
        for key in [k for k, owner in self._owner.items() if owner == run_id]:
            del self._owner[key]

    def run_of(self, context: str, task: str) -> AttachedRun | None:
        """The run a message with these ids belongs to (the module docstring's rules), remembered."""
        run = self._known(context, task) or self._decide(context)
        if run is not None:
            self._remember(context, run.run_id)
            self._remember(task, run.run_id)
        return run

    def _known(self, context: str, task: str) -> AttachedRun | None:
        for key in (context, task):
            owner = self._owner.get(key) if key else None
            if owner is not None and owner in self.runs:
                return self.runs[owner]
        return None

    def _decide(self, context: str) -> AttachedRun | None:
        runs = list(self.runs.values())
        if context:
            own = [r for r in runs if context in r.contexts()]
            if len(own) == 1:
                return own[0]
        waiting = [r for r in runs if r.waiting()]
        if len(waiting) == 1:
            return waiting[0]
        return runs[0] if len(runs) == 1 else None

    def _remember(self, key: str, run_id: str) -> None:
        if not key:
            return
        if len(self._owner) >= MAX_IDS:
            self._owner.pop(next(iter(self._owner)))
        self._owner[key] = run_id


class _Router:
    """A ``Recording`` for the suite's agents: each message goes into its run's transcript."""

    def __init__(self, suite: SuiteRemoteAgents) -> None:
        self.suite = suite

    def message(
        self, agent: str, direction: Any, msg: Any, *, state: str | None = None, task: str = ""
    ) -> None:
        run = self.suite.run_of(msg.context_id or "", task or msg.task_id or "")
        if run is None:
            self.suite.unattributed[agent] += 1
            return
        run.recording.message(agent, direction, msg, state=state, task=task)

    def add(self, agent: str, direction: Any, *, context: str = "", task: str = "", **kw: Any) -> None:
        run = self.suite.run_of(context, task)
        if run is None:
            self.suite.unattributed[agent] += 1
            return
        run.recording.add(agent, direction, context=context, task=task, **kw)


class _WallClock:
    """Seconds since the epoch: a held run's exchanges, placed on the worker's clock there."""

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


async def fetch_exchanges(held: HeldRun, run_id: str, *, http: httpx.AsyncClient) -> list[Any]:
    """A held run's exchanges from the driver, as the driver stamped them (wall-clock ``at``)."""
    import msgspec

    from tamesu.kernel.events import RemoteMessage, Truncated

    resp = await http.get(held.url + run_id, headers={"Authorization": f"Bearer {held.token}"}, timeout=30)
    resp.raise_for_status()
    out: list[Any] = []
    for item in resp.json():
        kind = RemoteMessage if item.get("type") != "truncated" else Truncated
        out.append(msgspec.convert(item, kind))
    return out
