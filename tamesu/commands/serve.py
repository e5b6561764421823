"""``tamesu serve livekit``: the loopback LiveKit server as a dev server a team can run.

It starts ``tamesu.testing``'s loopback server the way ``livekit-server --dev`` starts: on port
7880 with the keys ``devkey`` / ``secret`` unless told otherwise, answering ``GET /`` with 200 so
a script can wait for it; it prints the URL and the keys (they are the user's own dev keys, the
point is to hand them on), then serves rooms and agent workers until it is stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any

from tamesu.commands import EXIT_OK
from tamesu.errors import UsageError

__all__ = ["add_arguments", "loopback_livekit", "parse_keys", "run"]

DEV_KEYS = "devkey:secret"
"""The keys ``livekit-server --dev`` uses."""


def parse_keys(text: str) -> tuple[str, str]:
    """``KEY:SECRET`` split in two; a clear error when it is not that."""
    key, sep, secret = text.partition(":")
    if not sep or not key.strip() or not secret.strip():
        raise UsageError("--keys takes KEY:SECRET (for example devkey:secret)")
    return key.strip(), secret.strip()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "server", choices=("livekit",), help="what to serve: livekit (a loopback LiveKit server)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=7880, help="the port to listen on (default 7880; 0: any free one)"
    )
    parser.add_argument(
        "--keys", default=DEV_KEYS, help=f"the API key and secret as KEY:SECRET (default {DEV_KEYS})"
    )


def run(args: argparse.Namespace) -> int:
    key, secret = parse_keys(args.keys)
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: expected 0 to 65535")
    asyncio.run(_serve(args.host, args.port, key, secret))
    return EXIT_OK


def loopback_livekit(**server: Any) -> Any:
    """``tamesu.testing.serve_livekit_server(**server)``, imported only when a server is wanted (here,
    and for a run whose tamesu.yaml says ``livekit: { serve: true }``)."""
    from tamesu.extras import missing_modules

    if missing_modules(["livekit.api", "aiortc", "aiohttp"]):
        from tamesu.errors import MissingExtraError

        raise MissingExtraError(
            "the livekit SDK, livekit-api and aiortc (for a loopback LiveKit server)", extra="livekit"
        )
    from tamesu.testing.livekit_server import serve_livekit_server

    return serve_livekit_server(**server)


async def _serve(host: str, port: int, key: str, secret: str) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with loopback_livekit(api_key=key, api_secret=secret, host=host, port=port) as server:
            print(f"tamesu: a loopback LiveKit server at {server.url}", flush=True)
            print(f"LIVEKIT_URL={server.url}", flush=True)
            print(f"LIVEKIT_API_KEY={key}", flush=True)
            print(f"LIVEKIT_API_SECRET={secret}", flush=True)
            print(
                "tamesu: serving rooms and agent workers until stopped (Ctrl-C)", file=sys.stderr, flush=True
            )
            await stop.wait()
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
