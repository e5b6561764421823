"""What every run in one process shares: the HTTP client, the redactor, secret values, the clock,
the speech pool.

One ``RunServices`` lives in the process that runs graphs (the CLI's process for the local
placement, each Ray worker for the Ray placement); nothing in it is sent between processes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.clock import MonotonicClock
from tamesu.secrets import Redactor
from tamesu.speech_pool import local_speech_pool

if TYPE_CHECKING:
    import httpx

    from tamesu.clock import Clock
    from tamesu.models.router import ModelRouter
    from tamesu.speech_pool import SpeechPool

__all__ = ["RunServices", "make_http_client"]


def make_http_client(*, timeout: float | None = None) -> httpx.AsyncClient:
    """The shared client: ``tamesu.http.make_client`` (aiohttp transport) when present, plain httpx else."""
    try:
        from tamesu.http import make_client
    except ImportError:
        import httpx

        return httpx.AsyncClient(timeout=timeout)
    return make_client(timeout=timeout)


_IDENTITIES = 64
"""How many ``models`` objects ``router_for`` remembers by identity (a Ray worker sees new copies)."""


@dataclass
class RunServices:
    """Shared by the runs of one process; ``secrets`` are resolved values, redacted from then on."""

    http: httpx.AsyncClient
    redactor: Redactor = field(default_factory=Redactor)
    secrets: dict[str, str] = field(default_factory=dict)
    """Secret values by name, for ``{{secrets.NAME}}``; refs a run names beyond these resolve in-process."""
    clock_factory: Callable[[], Clock] = MonotonicClock
    """A new clock per run (its zero is the run's start)."""
    update_golden: bool = False
    output_dir: Path | None = None
    models: ModelRouter | None = None
    """The invocation's model router (judges, the simulated user, model targets); when None, one
    is made per distinct ``models:`` configuration the runs carry."""
    router_factory: Callable[[Any], ModelRouter | None] | None = None
    """Makes the router for a ``models:`` configuration (credentials, providers, cache); see
    ``tamesu.models.setup.RouterFactory``."""
    speech: SpeechPool = field(default_factory=local_speech_pool)
    """The speech engines (TTS, STT) the voice calls use: this process's own, or a client of a
    pool of engine actors on other Ray nodes (``tamesu.runner.placement.ray.RaySpeechClient``)."""
    _routers: dict[str, Any] = field(default_factory=dict, repr=False)
    _by_identity: dict[int, tuple[Any, ModelRouter | None]] = field(default_factory=dict, repr=False)
    """The router of each ``models`` object seen lately: the runs of a plan share one object, so
    the configuration is serialised to find its router once, not on every run."""

    def __post_init__(self) -> None:
        for value in self.secrets.values():
            self.redactor.add(value)

    def router_for(self, models: Any) -> ModelRouter | None:
        """The router for a run whose spec says ``models``: the shared one, else one per configuration."""
        if self.models is not None:
            return self.models
        if models is None:
            return None
        seen = self._by_identity.get(id(models))
        if seen is not None and seen[0] is models:
            return seen[1]
        router = self._router(models)
        if len(self._by_identity) >= _IDENTITIES:
            self._by_identity.clear()
        self._by_identity[id(models)] = (models, router)
        return router

    def _router(self, models: Any) -> ModelRouter | None:
        if self.router_factory is not None:
            return self.router_factory(models)
        key = models.model_dump_json() if hasattr(models, "model_dump_json") else repr(models)
        if key not in self._routers:
            from tamesu.models.router import ModelRouter

            self._routers[key] = ModelRouter(models)
        return self._routers[key]  # type: ignore[no-any-return]

    @classmethod
    def create(
        cls,
        *,
        secrets: Mapping[str, str] | None = None,
        redactor: Redactor | None = None,
        clock_factory: Callable[[], Clock] | None = None,
        update_golden: bool = False,
        output_dir: Path | str | None = None,
        http_timeout: float | None = None,
        models: ModelRouter | None = None,
        router_factory: Callable[[Any], ModelRouter | None] | None = None,
        speech: SpeechPool | None = None,
    ) -> RunServices:
        return cls(
            http=make_http_client(timeout=http_timeout),
            redactor=redactor or Redactor(),
            secrets=dict(secrets or {}),
            clock_factory=clock_factory or MonotonicClock,
            update_golden=update_golden,
            output_dir=Path(output_dir) if output_dir is not None else None,
            models=models,
            router_factory=router_factory,
            speech=speech or local_speech_pool(),
        )

    async def aclose(self) -> None:
        await self.http.aclose()
