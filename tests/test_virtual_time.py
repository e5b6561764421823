"""The virtual-time event loop the voice tests run on: idle waits jump, real work stops the clock."""

from __future__ import annotations

import asyncio
import time

import pytest

from .virtual_time import LoopClock, VirtualTimeLoop

pytestmark = pytest.mark.unit


def run(main: object) -> None:
    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        runner.run(main)  # type: ignore[arg-type]


def test_a_sleep_jumps_the_clock_and_takes_no_real_time() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        clock = LoopClock()
        started = time.monotonic()
        await asyncio.gather(asyncio.sleep(30), asyncio.sleep(0.02))
        assert loop.time() == 30 and clock.now() == 30
        assert time.monotonic() - started < 5

    run(main())


def test_the_clock_stands_still_while_a_thread_works() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        timer = asyncio.create_task(asyncio.sleep(0.01))
        await loop.run_in_executor(None, time.sleep, 0.05)
        assert loop.time() == 0, "a timer due in 10 ms did not fire while the thread worked"
        await timer
        assert loop.time() == pytest.approx(0.01)

    run(main())


def test_loopback_bytes_arrive_before_the_clock_moves() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        heard = asyncio.get_running_loop().create_future()

        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            heard.set_result((await reader.readexactly(1 << 20), loop.time()))
            writer.close()

        server = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        timer = asyncio.create_task(asyncio.sleep(5))
        writer.write(b"x" * (1 << 20))
        data, at = await heard
        assert len(data) == 1 << 20 and at == 0, "a megabyte over loopback takes no virtual time"
        timer.cancel()
        writer.close()
        server.close()
        await server.wait_closed()

    run(main())
