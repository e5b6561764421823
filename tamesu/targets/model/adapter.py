"""The ``model`` target: a system prompt under test, run on a model with tools tamesu answers.

There is no agent server: the adapter keeps the conversation, calls the model through the
invocation's ``ModelRouter`` (role ``target``, so its spend is accounted apart from tamesu's own
judges), answers each tool call from the tool's configured ``result`` (or a fuzzed answer), and
calls the model again until it answers in text, ends the session with ``done_tool``, or has used
``max_tool_rounds`` rounds of calls. Each model call is recorded as a raw response naming the model
that answered (after any fallback) and its usage.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.errors import ModelError, TargetError, TemplateError
from tamesu.fuzz import ToolFuzzer, render_tool_result, result_text
from tamesu.kernel.messages import AgentTurn, Message, RawResponse, ToolCall, ToolResult, UserTurn
from tamesu.targets.base import TargetAdapter, target, turn_text
from tamesu.targets.model.settings import ModelTarget, PromptUnderTest

if TYPE_CHECKING:
    from tamesu.models.router import ChatMessage, Completion, ModelRouter, ToolSpec
    from tamesu.targets.base import TargetContext
    from tamesu.targets.model.settings import ToolDef

__all__ = ["DONE_RESULT", "ROLE", "ModelAdapter"]

ROLE = "target"
"""The usage role of the model under test: its model is ``model`` or models.default, its fallbacks
``fallback`` then models.fallback.default."""
DONE_RESULT: dict[str, Any] = {"ok": True}
"""The answer to the done tool (and to a tool configured without a result)."""


@target("model", config=ModelTarget)
class ModelAdapter(TargetAdapter):
    """One conversation with a prompt under test; see the module docstring."""

    config: PromptUnderTest
    """A model target's config, or another type's that runs a prompt the same way (mcp)."""

    def __init__(self, config: PromptUnderTest, ctx: TargetContext) -> None:
        super().__init__(config, ctx)
        self.history: list[ChatMessage] = []
        self.tools: dict[str, ToolDef] = {t.name: t for t in getattr(config, "tools", None) or []}
        self.done_tool = config.done_tool or "end_session"
        self.max_rounds = config.max_tool_rounds or 5
        self.fuzzer = ToolFuzzer.for_context(ctx)
        self.specs: list[ToolSpec] = []
        """The tools offered to the model."""
        self._calls = 0
        self._started = False

    @property
    def router(self) -> ModelRouter:
        if self.ctx.models is None:
            raise TargetError(
                f"a {self.type_name} target needs a model router: set models.default in the suite or tamesu.yaml",
                retryable=False,
                kind="config",
            )
        return self.ctx.models

    def chain(self) -> list[str]:
        """The models tried in order: model (or models.default), fallback, models.fallback.default."""
        first, *rest = self.router.chain(ROLE, self.config.model or None)
        own = [m for m in self.config.fallback or [] if m != first]
        return [first, *own, *[m for m in rest if m not in own]]

    async def start(self) -> None:
        from tamesu.models.router import ChatMessage, ToolSpec

        self._started = True
        try:
            self.chain()
        except ModelError as exc:
            raise TargetError(str(exc), retryable=False, kind="config") from None
        system = self._system_prompt()
        if system:
            self.history.append(ChatMessage("system", system))
        self.specs = [
            ToolSpec(
                t.name,
                t.description or "",
                t.parameters if t.parameters is not None else {"type": "object", "properties": {}},
            )
            for t in self.tools.values()
        ]

    def _system_prompt(self) -> str:
        from tamesu.templates import render_text

        text = self.config.system
        if text is None and self.config.system_file:
            path = Path(self.ctx.suite_dir) / self.config.system_file
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise TargetError(
                    f"system_file {path}: {exc.strerror or exc}", retryable=False, kind="config"
                ) from None
        try:
            return render_text(text or "", self.ctx.scope)
        except TemplateError as exc:
            raise TargetError(f"the system prompt: {exc}", retryable=False, kind="config") from None

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        from tamesu.models.router import ChatMessage

        if not self._started:
            await self.start()
        clock = self.ctx.clock
        if user is not None:
            self.history.append(ChatMessage("user", turn_text(user, "model")))
        sent_at = clock.now()
        first_byte_at: float | None = None
        text = ""
        done = False
        rounds = 0
        while True:
            completion = await self._complete()
            if first_byte_at is None:
                first_byte_at = clock.now()
            rounds += 1
            yield RawResponse(body=_raw_body(completion, rounds), at=clock.now())
            if completion.text.strip():
                text = completion.text
            calls = [self._normalise(c) for c in completion.tool_calls]
            self.history.append(ChatMessage("assistant", completion.text, tool_calls=calls))
            over_limit = rounds > self.max_rounds
            for call in calls:
                name = call["name"]
                yield ToolCall(name=name, args=call["args"], id=call["id"], at=clock.now())
                if name == self.done_tool:
                    done = True
                    result: Any = await self.run_tool(name, call["args"])
                elif over_limit:
                    result = {"error": f"not run: the turn used its {self.max_rounds} tool rounds"}
                elif not self.offers(name):
                    result = {"error": f"unknown tool {name}"}
                    yield RawResponse(body={"event": "unknown_tool", "name": name}, at=clock.now())
                else:
                    result = await self.run_tool(name, call["args"])
                    mode = self.fuzzer.mode(name)
                    if mode is not None:
                        yield RawResponse(body={"event": "fuzz", "tool": name, "mode": mode}, at=clock.now())
                yield ToolResult(name=name, result=result, id=call["id"], at=clock.now())
                self.history.append(
                    ChatMessage("tool", result_text(result), tool_call_id=call["id"], name=name)
                )
            if done or not calls:
                break
            if over_limit:
                body = {"event": "max_tool_rounds", "limit": self.max_rounds}
                yield RawResponse(body=body, at=clock.now())
                break
        end_at = clock.now()
        yield AgentTurn(
            text=text, done=done, sent_at=sent_at, first_byte_at=first_byte_at, end_at=end_at, at=end_at
        )

    def _normalise(self, call: dict[str, Any]) -> dict[str, Any]:
        """Every call gets an id (some providers omit it) and a dict of arguments."""
        self._calls += 1
        args = call.get("args")
        return {
            "id": call.get("id") or f"call_{self._calls}",
            "name": str(call.get("name") or ""),
            "args": args if isinstance(args, dict) else {},
        }

    def offers(self, name: str) -> bool:
        """Whether the model was offered the tool ``name`` (a call of any other is answered with an error)."""
        return name in self.tools

    async def run_tool(self, name: str, args: dict[str, Any]) -> Any:
        """The answer to one call: the tool's configured result, or the test's fuzzed one."""
        return await self.fuzzer.answer(name, partial(self._configured, name, args))

    def _configured(self, name: str, args: dict[str, Any]) -> Any:
        tool = self.tools.get(name)
        if tool is None or tool.result is None:
            return dict(DONE_RESULT)
        try:
            return render_tool_result(tool.result, args, self.ctx.scope)
        except TemplateError as exc:
            raise TargetError(f"the result of tool {name}: {exc}", retryable=False, kind="config") from None

    async def _complete(self) -> Completion:
        router = self.router
        try:
            return await router.complete(
                ROLE,
                list(self.history),
                tools=self.specs or None,
                model=self.config.model or None,
                temperature=self.config.temperature,
                max_tokens=self.config.max_tokens,
                fallback=self.config.fallback,
                ledger=self.ctx.ledger,
            )
        except ModelError as exc:
            tried = ", ".join(self.chain())
            message = self.ctx.redactor.redact(f"the model under test did not answer (tried {tried}): {exc}")
            raise TargetError(message, retryable=True, kind="model") from None


def _raw_body(completion: Completion, call: int) -> dict[str, Any]:
    """What the transcript keeps of one model call: who answered, at what cost, with which calls."""
    return {
        "model": completion.model,
        "call": call,
        "usage": completion.usage.to_dict(),
        "text": completion.text,
        "tool_calls": [{"name": c.get("name"), "args": c.get("args")} for c in completion.tool_calls],
    }
