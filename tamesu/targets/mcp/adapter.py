"""The ``mcp`` target: the prompt under test with the tools of an MCP server.

It is the ``model`` target (``tamesu.targets.model.adapter``: the same conversation, model router, tool
rounds, fuzzing and transcript) whose tools are those of a real MCP server instead of configured
answers. The server is spawned over stdio (``command`` / ``args`` / ``env``, in the suite's folder)
or reached over streamable HTTP (``url`` / ``headers``) with the official ``mcp`` SDK; its tools
(only ``allow_tools`` when given) are offered to the model, and each call the model makes runs on
the server within ``call_timeout``.

What the server answers is part of the system under test: a tool result (``isError`` ones too,
as ``{"error": TEXT}``) goes back to the model and into the transcript. A server that cannot be
started or reached, exits, hangs past ``call_timeout``, writes what is not JSON-RPC or answers a
JSON-RPC error ends the run as an infrastructure error whose message carries the tail of the
server's stderr, redacted. It is bounded like any agent: a message is read within
``limits.answer_size`` before it is parsed (``mcp_wire``), the tool list within ``MAX_TOOLS``
and ``answer_size``, and at most ``MAX_OFFERED`` tools go to the model.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.durations import format_duration, parse_duration
from tamesu.errors import MissingExtraError, TargetError, TemplateError
from tamesu.limits import LimitExceeded, decode_json, payload_size
from tamesu.targets.base import target
from tamesu.targets.mcp.mcp_wire import TOO_LARGE, StdioPipe, bounded_http, bounded_stdio
from tamesu.targets.mcp.settings import McpTarget
from tamesu.targets.model.adapter import ModelAdapter
from tamesu.untrusted import printable, storable_text
from tamesu.wire.connect import ConnectPolicy, Retry, open_session, retrying

if TYPE_CHECKING:
    from mcp import Client

    from tamesu.targets.base import TargetContext

__all__ = ["STDERR_TAIL", "McpAdapter", "McpLink", "innermost", "tool_answer"]

STDERR_TAIL = 2000
"""How many characters of the end of a stdio server's stderr an error message carries."""
OPEN_TIMEOUT = 30.0
"""How long a server has to start and answer the protocol handshake."""
MAX_TOOL_PAGES = 100
"""tools/list pages read at most (a server that paginates forever cannot hang the run)."""
MAX_TOOLS = 1000
"""Tools a server may list, over all its pages."""
MAX_OFFERED = 128
"""Tools offered to the model at most (what OpenAI's API takes); ``allow_tools`` picks fewer."""
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001


def _sdk() -> Any:
    try:
        import mcp
    except ImportError:
        raise MissingExtraError("the mcp SDK (for mcp targets)", extra="mcp") from None
    return mcp


class McpLink:
    """One session with one MCP server, held open by a task of its own.

    The SDK's client is an anyio context that must be entered and left in one task, while a run
    starts, talks to and stops its target from whichever task drives it; the holder task owns the
    context and the others only send requests through it.
    """

    def __init__(self, ctx: TargetContext, *, where: str, pipe: StdioPipe | None = None) -> None:
        self.ctx = ctx
        self.where = where
        """The server as error messages name it (its command or its URL)."""
        self.pipe = pipe
        """A stdio server's transport: its stderr's tail, a message being read."""
        if pipe is not None:
            pipe.on_invalid = self._not_json_rpc
        self.client: Client | None = None
        self._ready: asyncio.Future[None] | None = None
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def open(self, make: Any, timeout: float | None = None) -> None:
        """Enter ``make()`` (an ``mcp.Client``) in the holder task and wait for its handshake
        (``OPEN_TIMEOUT`` when no timeout is given)."""
        timeout = OPEN_TIMEOUT if timeout is None else timeout
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._task = asyncio.create_task(self._hold(make), name=f"mcp {self.where}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except asyncio.TimeoutError:
            error = self.error(f"no MCP handshake within {format_duration(timeout)}", retryable=True)
            await self.close()
            raise error from None

    def _not_json_rpc(self, line: str) -> None:
        """The server wrote a line that is not JSON-RPC: a handshake waiting for it fails now."""
        if self._ready is not None and not self._ready.done():
            error = self.error(f"its output is not JSON-RPC: {printable(line[:120])!r}", retryable=False)
            self._ready.set_exception(error)

    async def _hold(self, make: Any) -> None:
        assert self._ready is not None
        try:
            async with make() as client:
                self.client = client
                self._ready.set_result(None)
                await self._closing.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc if isinstance(exc, Exception) else ConnectionError(str(exc)))
            if not isinstance(exc, Exception):
                raise
        finally:
            self.client = None

    async def close(self) -> None:
        """Leave the session (the SDK stops a stdio server: stdin closed, then terminate, then kill).
        A session still in its handshake is cancelled: it would never see ``_closing``."""
        self._closing.set()
        task, self._task = self._task, None
        if task is not None:
            if self._ready is None or not self._ready.done():
                task.cancel()
            try:
                await asyncio.wait_for(task, 10.0)
            except BaseException:
                task.cancel()

    def live(self) -> Client:
        if self.client is None:
            raise self.error("the MCP session is closed (the server went away)", retryable=True)
        return self.client

    def stderr_tail(self) -> str:
        """The end of the server's stderr so far (stdio servers), as storable text."""
        if self.pipe is None:
            return ""
        return storable_text(self.pipe.stderr_text()[-STDERR_TAIL:].strip())

    def error(self, what: str, *, retryable: bool, kind: str = "agent") -> TargetError:
        """A redacted TargetError about the server, with the tail of its stderr when there is one."""
        tail = self.stderr_tail()
        message = f"MCP server {self.where}: {what}" + (f"\n--- its stderr ends ---\n{tail}" if tail else "")
        return TargetError(self.ctx.redactor.redact(message), retryable=retryable, kind=kind)

    def failure(self, exc: Exception, what: str) -> TargetError:
        """The TargetError for an SDK exception raised while doing ``what``."""
        code = getattr(exc, "code", None)
        if code == TOO_LARGE or "limits.answer_size" in str(exc):
            return self.ctx.limits.too_large(f"the answer of MCP server {self.where} while {what}")
        if code == _CONNECTION_CLOSED:
            return self.error(f"the connection closed while {what} (did the server exit?)", retryable=True)
        if code == _REQUEST_TIMEOUT:
            return self.error(f"no answer while {what}", retryable=True)
        if isinstance(code, int):
            return self.error(f"answered error {code} while {what}: {exc}", retryable=False)
        cause = innermost(exc)
        return self.error(f"{what} failed: {str(cause) or type(cause).__name__}", retryable=True)

    async def tools(self) -> list[Any]:
        """Every tool the server lists (all pages)."""
        client, out, cursor, size = self.live(), [], None, 0
        limits = self.ctx.limits
        for _ in range(MAX_TOOL_PAGES):
            try:
                page = await client.list_tools(cursor=cursor)
            except Exception as exc:
                raise self.failure(exc, "listing its tools") from None
            out.extend(page.tools)
            size += sum(len(tool.model_dump_json()) for tool in page.tools)
            if len(out) > MAX_TOOLS:
                raise self.error(f"it lists more than {MAX_TOOLS} tools", retryable=False, kind="limit")
            if size > limits.answer_size:
                raise limits.too_large(f"the tool list of MCP server {self.where}")
            cursor = page.next_cursor
            if not cursor:
                break
        return out

    async def call(self, name: str, args: dict[str, Any], timeout: float) -> Any:
        """Run one tool call; the result as ``tool_answer`` gives it."""
        client = self.live()
        try:
            result = await asyncio.wait_for(
                client.call_tool(name, args, read_timeout_seconds=timeout), timeout + 1.0
            )
        except asyncio.TimeoutError:
            raise self._late(name, timeout) from None
        except Exception as exc:
            if getattr(exc, "code", None) == _REQUEST_TIMEOUT:
                raise self._late(name, timeout) from None
            raise self.failure(exc, f"calling tool {name}") from None
        answer = tool_answer(result, depth=self.ctx.limits.json_depth)
        if payload_size(answer) > self.ctx.limits.answer_size:
            raise self.ctx.limits.too_large(f"the answer of tool {name} from MCP server {self.where}")
        return answer

    def _late(self, name: str, timeout: float) -> TargetError:
        """No result within ``call_timeout``: the server was silent, or its answer was still arriving."""
        took = format_duration(timeout)
        if self.pipe is not None and self.pipe.partial:
            return self.error(
                f"the answer to tool {name} took longer than call_timeout ({took}) to read", retryable=True
            )
        return self.error(f"no answer to tool {name} within {took} (call_timeout)", retryable=True)


def tool_answer(result: Any, *, depth: int) -> Any:
    """A ``CallToolResult`` as the model and the transcript get it: the structured content when
    there is one, else the content (a text block that is JSON as that JSON, other blocks as a
    short description); a result the server flags as an error is ``{"error": TEXT}``."""
    if result.is_error:
        text = "\n".join(b.text for b in result.content if getattr(b, "type", "") == "text")
        return {"error": text or "the tool failed"}
    if result.structured_content is not None:
        return result.structured_content
    blocks = [_block(b, depth) for b in result.content]
    return blocks[0] if len(blocks) == 1 else blocks


def _block(block: Any, depth: int) -> Any:
    kind = getattr(block, "type", "")
    if kind == "text":
        text = block.text
        if text.lstrip()[:1] in ("{", "["):
            try:
                return decode_json(text, depth)
            except (ValueError, LimitExceeded):
                pass
        return text
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        return {"resource": str(resource.uri), **({"text": text} if text is not None else {})}
    described = {"type": kind}
    for key in ("mime_type", "uri", "name"):
        value = getattr(block, key, None)
        if value is not None:
            described[key] = str(value)
    return described


@target("mcp", config=McpTarget)
class McpAdapter(ModelAdapter):
    """The model target with an MCP server's tools; see the module docstring."""

    config: McpTarget

    def __init__(self, config: McpTarget, ctx: TargetContext) -> None:
        super().__init__(config, ctx)
        self.call_timeout = parse_duration(config.call_timeout or "60s")
        self.policy = ConnectPolicy.from_config(config.connect)
        self.link: McpLink | None = None
        self.server_tools: set[str] = set()

    async def start(self) -> None:
        from tamesu.models.router import ToolSpec

        _sdk()  # the missing extra is named before anything else is tried
        await super().start()
        try:
            session = self.config.session
            if session is not None and session.open is not None:
                await open_session(self.ctx, session.open, self.policy)
            self.link = await (self._spawn() if self.config.command else self._reach())
            listed = await self.link.tools()
        except TemplateError as exc:
            await self.stop()
            raise TargetError(str(exc), retryable=False, kind="config") from None
        except BaseException:
            await self.stop()
            raise
        by_name = {t.name: t for t in listed}
        allowed = self.config.allow_tools
        if allowed is not None:
            unknown = [n for n in allowed if n not in by_name]
            if unknown:
                offered = ", ".join(sorted(by_name)) or "none"
                error = self.link.error(
                    f"allow_tools names {', '.join(unknown)}, which it does not offer (it offers: {offered})",
                    retryable=False,
                    kind="config",
                )
                await self.stop()
                raise error
        chosen = [t for t in listed if allowed is None or t.name in allowed]
        if len(chosen) > MAX_OFFERED:
            error = self.link.error(
                f"it offers {len(chosen)} tools; a model is given at most {MAX_OFFERED}: name those to "
                "offer in allow_tools",
                retryable=False,
                kind="config",
            )
            await self.stop()
            raise error
        self.server_tools = {t.name for t in chosen}
        self.specs = [
            ToolSpec(
                t.name, t.description or "", dict(t.input_schema or {"type": "object", "properties": {}})
            )
            for t in chosen
        ]

    async def _spawn(self) -> McpLink:
        """Start the stdio server in the suite's folder with only the environment it is given."""
        from tamesu.templates import render_text

        mcp = _sdk()
        scope = self.ctx.scope
        command = render_text(self.config.command or "", scope)
        args = [render_text(a, scope) for a in self.config.args or []]
        env = {k: render_text(v, scope) for k, v in (self.config.env or {}).items()}
        pipe = StdioPipe(limit=self.ctx.limits.answer_size)
        link = McpLink(self.ctx, where=command, pipe=pipe)

        def make() -> Any:
            return mcp.Client(
                bounded_stdio(command, args, env=env, cwd=str(Path(self.ctx.suite_dir)), pipe=pipe)
            )

        try:
            await link.open(make)
        except TargetError:
            raise
        except OSError as exc:
            error = link.error(f"cannot start: {exc.strerror or exc}", retryable=False, kind="config")
            await link.close()
            raise error from None
        except Exception as exc:
            error = link.failure(exc, "starting")  # before close, which drops the stderr it quotes
            await link.close()
            raise error from None
        return link

    async def _reach(self) -> McpLink:
        """Open a streamable HTTP session; a refused connection is retried as ``connect:`` says."""
        from tamesu.templates import render_text

        mcp = _sdk()
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        scope = self.ctx.scope
        url = render_text(self.config.url or "", scope)
        headers = {k: render_text(v, scope) for k, v in (self.config.headers or {}).items()}

        def make() -> Any:
            limit = self.ctx.limits.answer_size
            http = httpx2.AsyncClient(
                headers=headers,
                timeout=httpx2.Timeout(self.ctx.turn_timeout, read=300.0),
                trust_env=False,
                transport=bounded_http(limit),
            )
            client = streamable_http_client(url, http_client=http, max_sse_event_size=limit)
            return _WithClient(http, mcp.Client(client))

        async def attempt() -> McpLink:
            link = McpLink(self.ctx, where=url)
            try:
                await link.open(make)
            except TargetError:
                raise
            except Exception as exc:
                await link.close()
                cause = innermost(exc)
                text = str(cause) or type(cause).__name__
                if isinstance(cause, OSError) or "connect" in type(cause).__name__.lower():
                    raise Retry(f"cannot reach the MCP server at {url}", text) from None
                raise link.failure(exc, "opening the session") from None
            return link

        return await retrying(self.ctx, self.policy, attempt)

    def offers(self, name: str) -> bool:
        return name in self.server_tools

    async def run_tool(self, name: str, args: dict[str, Any]) -> Any:
        if name not in self.server_tools or self.link is None:
            return await super().run_tool(name, args)
        link = self.link
        return await self.fuzzer.answer(name, lambda: link.call(name, args, self.call_timeout))

    async def stop(self) -> None:
        link, self.link = self.link, None
        if link is not None:
            await link.close()


class _WithClient:
    """An ``mcp.Client`` entered together with the HTTP client it uses, and both closed after."""

    def __init__(self, http: Any, client: Any) -> None:
        self.http = http
        self.client = client

    async def __aenter__(self) -> Any:
        await self.http.__aenter__()
        try:
            return await self.client.__aenter__()
        except BaseException:
            await self.http.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self.client.__aexit__(*exc)
        finally:
            await self.http.__aexit__(None, None, None)


def innermost(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (the SDK's task groups wrap what went wrong), followed
    through explicit causes."""
    while True:
        inner = getattr(exc, "exceptions", None)
        if inner:
            exc = inner[0]
        elif exc.__cause__ is not None:
            exc = exc.__cause__
        else:
            return exc
