"""A LiveKit server for the run, when tamesu.yaml asks for one (``livekit: { serve: true }``).

A team testing its LiveKit agent in CI has no LiveKit server; tamesu's loopback server
(``tamesu serve livekit``) stands in for it. With ``serve: true`` the run starts one before
anything is planned, with fresh keys, and makes it the project's LiveKit server: livekit and sip
targets that name no server of their own use it, hooks read ``{{livekit.url}}``,
``{{livekit.api_key}}`` and ``{{livekit.api_secret}}`` and see ``LIVEKIT_URL``,
``LIVEKIT_API_KEY`` and ``LIVEKIT_API_SECRET`` in their environment, so a ``before_all`` of
``python agent.py dev &`` starts the team's worker against it unchanged. The secret is registered
with the redactor at once. The server itself is handed in by the caller (the command line hands
``tamesu.testing``'s), so the runner depends on no test server.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import TYPE_CHECKING, Any

from tamesu.errors import UsageError

if TYPE_CHECKING:
    from tamesu.config.loader import LoadedSuite
    from tamesu.runner.suite_setup import SuiteSetup
    from tamesu.secrets import Redactor

__all__ = ["LivekitServe", "ServedLivekit", "serve_livekit"]

LivekitServe = Callable[..., AbstractAsyncContextManager[Any]]
"""``(api_key=, api_secret=) -> async context of a server with .url``: ``serve_livekit_server``'s shape."""


@dataclasses.dataclass(frozen=True)
class ServedLivekit:
    """The run's LiveKit server: where it is and its keys."""

    url: str
    api_key: str
    api_secret: str

    def env(self) -> dict[str, str]:
        """The variables a LiveKit Agents worker reads its server from."""
        return {
            "LIVEKIT_URL": self.url,
            "LIVEKIT_API_KEY": self.api_key,
            "LIVEKIT_API_SECRET": self.api_secret,
        }

    def apply(self, setups: dict[str, SuiteSetup]) -> None:
        """Every suite's hooks see the server: ``{{livekit.*}}`` and the worker's environment."""
        for setup in setups.values():
            if setup.scope is not None:
                setup.scope.set(
                    "livekit", {"url": self.url, "api_key": self.api_key, "api_secret": self.api_secret}
                )
            setup.env.update(self.env())


def _wanted(loaded: Sequence[LoadedSuite]) -> bool:
    return any(getattr(getattr(s.project, "livekit", None), "serve", False) for s in loaded)


async def serve_livekit(
    loaded: Sequence[LoadedSuite], stack: AsyncExitStack, redactor: Redactor, server: LivekitServe | None
) -> ServedLivekit | None:
    """Start the run's server on ``stack`` when the project asks for one, and make it the project's
    ``livekit:`` block; None when none is asked for."""
    if not _wanted(loaded):
        return None
    if server is None:
        raise UsageError(
            "livekit.serve needs a loopback LiveKit server: run through the tamesu command line, or pass "
            "livekit_server=tamesu.testing.serve_livekit_server to tamesu.run()"
        )
    key, secret = f"tamesu-{secrets.token_hex(4)}", secrets.token_urlsafe(32)
    redactor.add(secret)
    running = await stack.enter_async_context(server(api_key=key, api_secret=secret))
    served = ServedLivekit(url=str(running.url), api_key=key, api_secret=secret)
    for suite in loaded:
        block = getattr(suite.project, "livekit", None)
        if suite.project is not None and block is not None and block.serve:
            update = {"url": served.url, "api_key": key, "api_secret": secret}
            suite.project = suite.project.model_copy(update={"livekit": block.model_copy(update=update)})
    return served
