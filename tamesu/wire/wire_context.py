"""What the wire needs of a run's target context (``tamesu.targets.TargetContext`` is one).

The wire sits below the target adapters, so it names no adapter's type: connect retries, the
websockets and ``session.open`` read the run's clock, HTTP client, cookies, limits, redactor,
template scope and turn timeout, and count the faults they retry, through this protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import httpx

    from tamesu.clock import Clock
    from tamesu.http import RunCookies
    from tamesu.limits import Limits
    from tamesu.secrets import Redactor
    from tamesu.templates import Scope
    from tamesu.wire.faults import AgentFaults

__all__ = ["WireContext"]


class WireContext(Protocol):
    """A run's target context as the wire reads it."""

    @property
    def scope(self) -> Scope: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def http(self) -> httpx.AsyncClient: ...
    @property
    def redactor(self) -> Redactor: ...
    @property
    def turn_timeout(self) -> float: ...
    @property
    def limits(self) -> Limits: ...
    @property
    def cookies(self) -> RunCookies: ...
    @property
    def faults(self) -> AgentFaults: ...
