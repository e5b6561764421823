"""Where a run's actors live: in this process (``local``) or in a pool of Ray workers (``ray``).

Both placements have the same shape, so the scheduler does not care which one it drives:
``await placement.run(spec, secrets=..., timeout=...)`` returns a ``GraphOutcome`` and never raises
for what a run does (an unreachable agent, a dead Ray worker); ``await placement.aclose()`` ends it.
Only ``tamesu.runner.placement.ray`` imports Ray, and only when that placement is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

if TYPE_CHECKING:
    from tamesu.actors.graph import Ready
    from tamesu.actors.services import RunServices
    from tamesu.kernel.outcome import GraphOutcome
    from tamesu.run_spec import RunSpec
    from tamesu.runner.grading import OutcomeSink

__all__ = ["Placement", "make_placement"]


class Placement(Protocol):
    calls_ready: ClassVar[bool]
    """Whether ``run`` takes ``ready``: the run's graph lives in this process, so its remote
    agents' URLs can reach the ``before_each`` hooks here before its target starts."""

    async def run(
        self,
        spec: RunSpec,
        *,
        secrets: Mapping[str, str] | None = None,
        timeout: float | None = None,
        sink: OutcomeSink | None = None,
        ready: Ready | None = None,
    ) -> GraphOutcome:
        """One run to its outcome; ``timeout`` ends it with a timeout outcome and its partial transcript."""
        ...

    async def aclose(self) -> None: ...


def make_placement(
    kind: Literal["local", "ray"] = "local", *, services: RunServices | None = None, **options: Any
) -> Placement:
    """``local`` (options: encode_boundary) or ``ray`` (options: address, num_workers, ...)."""
    if kind == "local":
        from tamesu.actors.services import RunServices

        from .local import LocalPlacement

        if services is None:
            return LocalPlacement(RunServices.create(), owns_services=True, **options)
        return LocalPlacement(services, **options)
    if kind == "ray":
        from .ray import RayPlacement

        return RayPlacement(**options)
    raise ValueError(f"unknown placement {kind!r} (local or ray)")
