"""The smoke suite's peers, served by the installed tamesu (``tamesu.testing``), not the checkout.

    python peers.py     # prints one JSON line of URLs, serves until its stdin closes

An echo agent (rest), a scripted A2A agent (a2a), a scripted OpenAI-style model server (the mcp
target's model) and the web shop whose chat widget talks to the echo agent (browser).
"""

from __future__ import annotations

import asyncio
import json
import sys

import tamesu
from tamesu.testing import Reply, serve_a2a_agent, serve_echo_agent, serve_model_server
from tamesu.testing.web_shop import serve_web_shop


async def main() -> None:
    async with (
        serve_echo_agent() as rest,
        serve_a2a_agent() as a2a,
        serve_model_server() as model,
        serve_web_shop(rest) as shop,
    ):
        model.queue(
            Reply(tool_calls=[("get_current_time", {"timezone": "UTC"})]),
            Reply(text="It is noon in UTC."),
        )
        urls = {"rest": rest, "a2a": a2a.url, "model": model.base_url, "shop": shop}
        print(json.dumps({**urls, "tamesu": tamesu.__file__}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


if __name__ == "__main__":
    asyncio.run(main())
