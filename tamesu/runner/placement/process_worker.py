"""A worker process of the ``processes`` placement, and the frames it speaks (``python -m`` this module).

The driver starts ``python -m tamesu.runner.placement.process_worker FD`` with one end of a Unix
socket pair as ``FD``. Both sides write frames: a 4-byte big-endian length, then a pickled tuple.

driver to worker:
    ``("init", kwargs, sys_path)``   once, first: ``RunWorker(**kwargs)``, the driver's import path added
    ``("start", items)``            runs to start (``RunItem`` s, their shared parts once per worker)
    ``("call", id, method, args)``  ``cancel(key)``, ``active()`` or ``cpu_seconds()``; answered by id
    ``("close",)``                  end the runs and exit (so does the end of the socket)

worker to driver:
    ``("ready",)``                  the worker is set up
    ``("done", replies)``           outcomes (``Reply`` s); those finished in one tick travel together
    ``("answer", id, value)``       the result of a call

Pickle is safe here: both ends are tamesu processes of one invocation on one machine, and nothing
the agent sends is unpickled (its words travel inside outcomes, as msgpack or plain values).
"""

from __future__ import annotations

import asyncio
import pickle
import struct
import sys
from typing import Any

__all__ = ["FRAME_LIMIT", "frame", "main", "read_frame"]

FRAME_LIMIT = 1 << 30
"""The largest frame either side accepts (a batch of outcomes with their transcripts)."""
_HEADER = struct.Struct(">I")


def frame(message: tuple[Any, ...]) -> bytes:
    """One message as a frame (raises what pickle raises for a value it cannot carry)."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    if len(body) > FRAME_LIMIT:
        raise ValueError(f"a message of {len(body)} bytes is over the frame limit")
    return _HEADER.pack(len(body)) + body


async def read_frame(reader: asyncio.StreamReader) -> tuple[Any, ...] | None:
    """The next message, or None at the end of the stream (the other side is gone)."""
    try:
        (size,) = _HEADER.unpack(await reader.readexactly(_HEADER.size))
        if size > FRAME_LIMIT:
            raise ValueError(f"a frame of {size} bytes is over the limit")
        message = pickle.loads(await reader.readexactly(size))
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    return message  # type: ignore[no-any-return]


async def serve(fd: int) -> None:
    """Run the worker until the driver closes its end or says ``close``."""
    import socket

    from tamesu.runner.placement.worker import FAILED, RunWorker

    sock = socket.socket(fileno=fd)
    reader, writer = await asyncio.open_connection(sock=sock, limit=1 << 20)
    first = await read_frame(reader)
    if first is None or first[0] != "init":
        return
    _, kwargs, path = first
    sys.path.extend(p for p in path if p not in sys.path)
    worker = RunWorker(**kwargs)
    outgoing = asyncio.Event()

    def send(message: tuple[Any, ...]) -> None:
        writer.write(frame(message))
        outgoing.set()

    async def sender() -> None:
        """Outcomes go back as they finish: those of one tick in one frame; ``drain`` bounds what
        waits in this process when the driver reads slowly."""
        while True:
            await outgoing.wait()
            outgoing.clear()
            await asyncio.sleep(0)
            replies = worker.take()
            if replies:
                try:
                    writer.write(frame(("done", replies)))
                except (pickle.PicklingError, TypeError, ValueError, AttributeError) as exc:
                    for reply in replies:
                        try:
                            writer.write(frame(("done", [reply])))
                        except (pickle.PicklingError, TypeError, ValueError, AttributeError):
                            text = f"its outcome cannot travel between processes: {exc}"
                            writer.write(frame(("done", [(reply[0], FAILED, text)])))
            await writer.drain()

    async def answer(call_id: int, method: str, args: tuple[Any, ...]) -> None:
        from tamesu.runner.placement.worker import pack_outcome

        try:
            value: Any = getattr(worker, method)(*args)
            if asyncio.iscoroutine(value):
                value = await value
            if method == "cancel" and value is not None:
                value = pack_outcome(args[0], value)
        except Exception:  # an answer of None: the driver treats it as no answer
            value = None
        send(("answer", call_id, value))

    worker.on_done = outgoing.set
    sending = asyncio.create_task(sender())
    calls: set[asyncio.Task[None]] = set()
    send(("ready",))
    try:
        while True:
            message = await read_frame(reader)
            if message is None or message[0] == "close":
                break
            if message[0] == "start":
                replies = worker.start(message[1])
                if replies:
                    send(("done", replies))
            elif message[0] == "call":
                task = asyncio.create_task(answer(message[1], message[2], tuple(message[3])))
                calls.add(task)
                task.add_done_callback(calls.discard)
    finally:
        await worker.aclose()
        sending.cancel()
        writer.close()


def main(argv: list[str]) -> int:
    """The worker's process: Ctrl-C at the terminal is the driver's to handle (it cancels the runs
    and asks each worker for what they recorded), so it is ignored here."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if len(argv) != 2 or not argv[1].isdigit():
        sys.stderr.write("usage: python -m tamesu.runner.placement.process_worker FD\n")
        return 2
    asyncio.run(serve(int(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
