"""The ``mcp`` target's transports: an MCP server's messages read within bounds.

The SDK's own stdio client reads a line of any length before parsing it and sends the server's
stderr to a file that grows as long as the server writes. A server under test may answer
``tools/list`` with 52 MB or a tool call with 300 MB, or write to stderr without end: here each
line is read into at most ``limit`` bytes (a longer answer is skipped to its end and becomes a
JSON-RPC error for its request, named ``TOO_LARGE``), only the tail of stderr is kept, in memory,
and a line that is not JSON-RPC is reported (``invalid``) instead of leaving a handshake waiting.
Over streamable HTTP the SDK bounds each server-sent event but reads a JSON answer whole;
``bounded_http`` stops reading one at the limit.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from tamesu.limits import format_size

__all__ = ["TOO_LARGE", "StdioPipe", "bounded_http", "bounded_stdio", "too_large_text"]

TOO_LARGE = -32099
"""The JSON-RPC error code of an answer tamesu did not read for its size."""
STDERR_KEPT = 8192
"""Bytes of the end of the server's stderr kept (what error messages quote)."""
STOP_WAIT_S = 2.0
"""How long the server has to exit once its stdin is closed, and again once terminated."""
_ID = re.compile(rb'"id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.){0,200}")')


def too_large_text(limit: int) -> str:
    return f"the answer is larger than {format_size(limit)} (limits.answer_size in tamesu.yaml)"


@dataclass
class StdioPipe:
    """What the transport saw of the server besides its messages."""

    limit: int
    on_invalid: Callable[[str], None] = lambda text: None
    """Called with the start of the first line that is not JSON-RPC."""
    stderr: deque[bytes] = field(default_factory=deque)
    _stderr_size: int = 0
    partial: int = 0
    """Bytes of a message being read (0 between messages): an answer on its way."""
    invalid: str | None = None

    def stderr_text(self) -> str:
        return b"".join(self.stderr).decode("utf-8", "replace")

    def keep_stderr(self, chunk: bytes) -> None:
        self.stderr.append(chunk)
        self._stderr_size += len(chunk)
        while self._stderr_size - len(self.stderr[0]) >= STDERR_KEPT:
            self._stderr_size -= len(self.stderr.popleft())

    def too_large(self, head: bytes) -> bytes | None:
        """The JSON-RPC error that stands for a skipped answer (None: no id to answer)."""
        found = _ID.search(head)
        if found is None:
            return None
        error = {"code": TOO_LARGE, "message": too_large_text(self.limit)}
        return b'{"jsonrpc":"2.0","id":%s,"error":%s}' % (found.group(1), json.dumps(error).encode())


@contextlib.asynccontextmanager
async def bounded_stdio(
    command: str, args: list[str], *, env: dict[str, str], cwd: str, pipe: StdioPipe
) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server and give the SDK its (read, write) streams; stop the server after."""
    import subprocess

    import anyio
    from mcp import types
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process(
        [command, *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        cwd=cwd, env=get_default_environment() | env, start_new_session=True,
    )  # fmt: skip
    read_in, read_out = anyio.create_memory_object_stream[Any](0)
    write_in, write_out = anyio.create_memory_object_stream[Any](0)

    def parse(line: bytes) -> Any:
        try:
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
        except ValueError as exc:
            if pipe.invalid is None:
                pipe.invalid = line[:200].decode("utf-8", "replace")
                pipe.on_invalid(pipe.invalid)
            return exc

    async def read() -> None:
        assert process.stdout is not None
        buffer, skipping, head = bytearray(), False, b""
        async with read_in:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                async for chunk in process.stdout:
                    while chunk:
                        end = chunk.find(b"\n")
                        piece, chunk = (chunk, b"") if end < 0 else (chunk[:end], chunk[end + 1 :])
                        if not skipping:
                            buffer += piece
                            if len(buffer) > pipe.limit:
                                skipping, head = True, bytes(buffer[:400])
                                buffer.clear()
                        pipe.partial = len(buffer) + (1 if skipping else 0)
                        if end < 0:
                            continue
                        line = pipe.too_large(head) if skipping else bytes(buffer)
                        buffer.clear()
                        skipping, pipe.partial = False, 0
                        if line and line.strip():
                            await read_in.send(parse(line))

    async def write() -> None:
        assert process.stdin is not None
        async with write_out:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for message in write_out:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(text.encode() + b"\n")

    async def drain_stderr() -> None:
        assert process.stderr is not None
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            async for chunk in process.stderr:
                pipe.keep_stderr(chunk)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        tasks.start_soon(write)
        tasks.start_soon(drain_stderr)
        try:
            yield read_out, write_in
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
            tasks.cancel_scope.cancel()


async def _stop(process: Any) -> None:
    """Close the server's stdin, then terminate it, then kill it, each after ``STOP_WAIT_S``."""
    import anyio

    with contextlib.suppress(Exception):
        await process.stdin.aclose()
    for end in (None, process.terminate, process.kill):
        if end is not None:
            with contextlib.suppress(ProcessLookupError):
                end()
        with anyio.move_on_after(STOP_WAIT_S):
            await process.wait()
            return


def bounded_http(limit: int) -> Any:
    """An httpx2 transport whose JSON answers end, read no further, at ``limit`` bytes: the SDK
    turns the stream error into a JSON-RPC error for the request (its message says why)."""
    import httpx2

    class TooLarge(httpx2.StreamError):
        pass

    class Bounded(httpx2.AsyncByteStream):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def __aiter__(self) -> AsyncIterator[bytes]:
            read = 0
            async for chunk in self.inner:
                read += len(chunk)
                if read > limit:
                    raise TooLarge(too_large_text(limit))
                yield chunk

        async def aclose(self) -> None:
            await self.inner.aclose()

    class Transport(httpx2.AsyncHTTPTransport):
        async def handle_async_request(self, request: Any) -> Any:
            response = await super().handle_async_request(request)
            if response.headers.get("content-type", "").startswith("application/json"):
                response.stream = Bounded(response.stream)
            return response

    return Transport()
