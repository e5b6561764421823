"""Model roles -> calls: the role's model, tamesu's retry policy, fallbacks, usage, cache, budget.

Every model call tamesu makes (the simulated user, judges, the model target, extraction,
embeddings) goes through ``ModelRouter``, so retries, fallbacks, cost accounting and the response
cache behave the same everywhere, and the run records which model answered each call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from tamesu.errors import ModelError
from tamesu.models.local_gguf import is_gguf_ref
from tamesu.models.refs import ModelRef, ProviderSettings, parse_ref, provider_infos, resolve_settings
from tamesu.models.reply_cache import ResponseCache
from tamesu.models.usage import CallUsage, UsageLedger, price_usd

__all__ = ["ROLES", "ChatMessage", "Completion", "ModelRouter", "RetryPolicy", "ToolSpec"]

ROLES = ("default", "judge", "simulator", "browser_agent", "scenario_generator", "embedder")
Role = Literal["default", "judge", "simulator", "browser_agent", "scenario_generator", "embedder", "target"]


@dataclass
class ToolSpec:
    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass
class ChatMessage:
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """assistant: [{id, name, args}]"""
    tool_call_id: str | None = None
    name: str | None = None
    """tool: the tool's name."""


@dataclass
class Completion:
    text: str
    tool_calls: list[dict[str, Any]]
    data: Any
    """The parsed JSON object when an output schema was asked for."""
    usage: CallUsage

    @property
    def model(self) -> str:
        return self.usage.model


@dataclass
class RetryPolicy:
    attempts: int = 3
    backoff: float = 0.5
    max_backoff: float = 10.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Before try ``attempt + 1``: backoff doubled per try, with full jitter in [50%, 100%]."""
        base = min(self.max_backoff, self.backoff * (2 ** (attempt - 1)))
        return base * (0.5 + rng.random() * 0.5)


def _retryable(exc: BaseException) -> bool:
    try:
        from pydantic_ai import exceptions as ex
    except ImportError:  # only local/*.gguf models in use
        return isinstance(exc, (asyncio.TimeoutError, ConnectionError))
    if isinstance(exc, ex.ModelHTTPError):
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    retryable = tuple(
        getattr(ex, n)
        for n in (
            "ModelRateLimitError",
            "ModelServerError",
            "ModelConnectionError",
            "ModelOverloadedError",
            "ModelUnavailableError",
        )
        if hasattr(ex, n)
    )
    return isinstance(exc, (*retryable, asyncio.TimeoutError, ConnectionError))


def _describe(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    text = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    return f"HTTP {status}: {text}" if status else f"{type(exc).__name__}: {text}"


def _to_pydantic_ai(messages: list[ChatMessage]) -> list[Any]:
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    out: list[Any] = []
    pending: list[Any] = []
    for m in messages:
        if m.role == "assistant":
            if pending:
                out.append(ModelRequest(parts=pending))
                pending = []
            parts: list[Any] = [TextPart(m.content)] if m.content else []
            parts += [
                ToolCallPart(c["name"], c.get("args") or {}, tool_call_id=c.get("id") or f"call_{i}")
                for i, c in enumerate(m.tool_calls)
            ]
            out.append(ModelResponse(parts=parts))
        elif m.role == "system":
            pending.append(SystemPromptPart(m.content))
        elif m.role == "user":
            pending.append(UserPromptPart(m.content))
        else:
            pending.append(
                ToolReturnPart(m.name or "tool", m.content, tool_call_id=m.tool_call_id or "call_0")
            )
    if pending:
        out.append(ModelRequest(parts=pending))
    return out


def parse_json_answer(text: str) -> Any:
    """The JSON object in a model's answer (fenced or bare); ModelError when there is none."""
    s = text.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", s, re.S)
    if fence:
        s = fence.group(1).strip()
    try:
        return json.loads(s)
    except ValueError:
        m = re.search(r"\{.*\}", s, re.S)
        if m:
            try:
                return json.loads(m.group(0))
            except ValueError:
                pass
    raise ModelError(f"the model's answer is not the JSON asked for: {text[:200]!r}")


Backend = Callable[[ModelRef, ProviderSettings, dict[str, Any]], Awaitable[dict[str, Any]]]


class ModelRouter:
    """One per invocation; shared by every run in the process."""

    def __init__(
        self,
        models: Any = None,
        *,
        credentials: dict[str, str] | None = None,
        custom_providers: dict[str, ProviderSettings] | None = None,
        cache: ResponseCache | None = None,
        ledger: UsageLedger | None = None,
        timeout: float = 60.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        seed: int | None = None,
        base_dirs: Sequence[str | Path] = (),
    ) -> None:
        self.models = models
        self.credentials = credentials or {}
        self.custom = custom_providers or {}
        self.cache = cache
        self.ledger = ledger or UsageLedger()
        """Every call this router made, by role: the invocation's own usage."""
        self.timeout = timeout
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._models: dict[str, Any] = {}
        self.base_dirs = [str(d) for d in base_dirs]
        """Where a relative ``local/PATH.gguf`` is looked for (the suite's and project's folders)."""
        retry = getattr(models, "retry", None)
        self.retry = RetryPolicy()
        if retry is not None:
            from tamesu.durations import parse_duration

            self.retry = RetryPolicy(
                attempts=retry.attempts if retry.attempts is not None else 3,
                backoff=parse_duration(retry.backoff) if retry.backoff else 0.5,
                max_backoff=parse_duration(retry.max_backoff) if retry.max_backoff else 10.0,
            )

    def model_for(self, role: str) -> str | None:
        """The role's model: its own key, else models.default (the embedder: the default provider's)."""
        own = getattr(self.models, role, None) if self.models is not None and role in ROLES else None
        if own:
            return str(own)
        default = getattr(self.models, "default", None) if self.models is not None else None
        if role == "embedder":
            if not default:
                return None
            provider = default.split("/", 1)[0]
            return provider_infos.get(provider).default_embedder if provider in provider_infos else None
        return str(default) if default else None

    def chain(self, role: str, model: str | None = None) -> list[str]:
        """The model to call and then its fallbacks (embeddings use only the embedder's own list)."""
        first = model or self.model_for(role)
        if not first:
            key = "models.embedder" if role == "embedder" else f"models.{role} or models.default"
            raise ModelError(f"no model configured for the {role}: set {key} in the suite or tamesu.yaml")
        fallback = getattr(self.models, "fallback", None) if self.models is not None else None
        extra: list[str] = []
        if fallback is not None:
            own = getattr(fallback, role, None) if role in ROLES else None
            extra = list(own or ([] if role == "embedder" else (fallback.default or [])))
        return [first, *[m for m in extra if m != first]]

    def _settings(self, ref: ModelRef) -> ProviderSettings:
        return resolve_settings(ref, credentials=self.credentials, custom=self.custom)

    async def complete(
        self,
        role: str,
        messages: list[ChatMessage],
        *,
        tools: list[ToolSpec] | None = None,
        output_schema: dict[str, Any] | None = None,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        fallback: list[str] | None = None,
        ledger: UsageLedger | None = None,
    ) -> Completion:
        chain = self.chain(role, model)
        if fallback:
            chain = [chain[0], *[m for m in fallback if m != chain[0]], *chain[1:]]
        request = {
            "messages": [m.__dict__ for m in messages],
            "tools": [t.__dict__ for t in tools or []],
            "schema": output_schema,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "seed": seed,
        }
        return await self._with_policy(role, chain, request, self._chat_call, ledger)

    async def embed(
        self, texts: list[str], *, model: str | None = None, ledger: UsageLedger | None = None
    ) -> list[list[float]]:
        completion = await self._with_policy(
            "embedder", self.chain("embedder", model), {"embed": texts}, self._embed_call, ledger
        )
        vectors: list[list[float]] = completion.data
        return vectors

    async def _with_policy(
        self,
        role: str,
        chain: list[str],
        request: dict[str, Any],
        call: Callable[[ModelRef, dict[str, Any]], Awaitable[dict[str, Any]]],
        ledger: UsageLedger | None,
    ) -> Completion:
        errors: list[str] = []
        if call == self._chat_call:
            with contextlib.suppress(
                ImportError
            ):  # loaded before the clock starts: latency is the call's own
                import pydantic_ai.direct  # noqa: F401

        unusable = 0
        for ref_text in chain:
            ref = parse_ref(ref_text)
            keyed = {"model": str(ref), **request}
            cached = self.cache.get(keyed) if self.cache else None
            if cached is not None:
                usage = CallUsage(
                    role=role,
                    model=str(ref),
                    input_tokens=cached.get("input_tokens", 0),
                    output_tokens=cached.get("output_tokens", 0),
                    cost_usd=0.0,
                    cached=True,
                )
                self._record(usage, ledger)
                return Completion(
                    cached.get("text", ""), cached.get("tool_calls", []), cached.get("data"), usage
                )
            why = self.cannot_call(ref)
            if why is not None:  # no request, and no retry: nothing here will change on its own
                unusable += 1
                errors.append(why)
                continue
            attempt = 0
            while True:
                attempt += 1
                started = time.monotonic()
                try:
                    answer = await asyncio.wait_for(call(ref, request), timeout=self.timeout)
                except Exception as exc:
                    if _retryable(exc) and attempt < max(1, self.retry.attempts):
                        await self._sleep(self.retry.delay(attempt, self._rng))
                        continue
                    errors.append(f"{ref}: {_describe(exc)} (after {attempt} attempt{'s' * (attempt > 1)})")
                    break
                latency = time.monotonic() - started
                cost = price_usd(ref, answer["input_tokens"], answer["output_tokens"])
                usage = CallUsage(
                    role=role,
                    model=str(ref),
                    input_tokens=answer["input_tokens"],
                    output_tokens=answer["output_tokens"],
                    cost_usd=cost or 0.0,
                    priced=cost is not None,
                    latency_s=latency,
                    attempts=attempt,
                )
                self._record(usage, ledger)
                if self.cache is not None:
                    self.cache.put(keyed, answer)
                return Completion(
                    answer.get("text", ""), answer.get("tool_calls", []), answer.get("data"), usage
                )
        if unusable == len(chain):
            raise ModelError(f"the {role} cannot call a model here: " + "; ".join(errors), retryable=False)
        raise ModelError(f"every model failed for the {role}: " + "; ".join(errors))

    def cannot_call(self, ref: ModelRef) -> str | None:
        """Why ``ref`` cannot be called from here, in one line (its key is not set, the models
        extra is not installed), before any request is made; None when it can be tried."""
        if is_gguf_ref(ref) or ref.provider == "local":
            return None
        from tamesu.extras import EXTRAS, model_client_missing

        try:
            settings = self._settings(ref)
        except ModelError as exc:
            return str(exc)
        info = settings.info
        if info.needs_key and not settings.api_key:
            return f"{ref} needs an API key: set {' or '.join(info.key_env)} or models.credentials.{ref.provider}"
        missing = model_client_missing(info.family)
        if missing:
            return f"{ref} needs {', '.join(missing)}, which is not installed: {EXTRAS['models'].install}"
        return None

    def _record(self, usage: CallUsage, ledger: UsageLedger | None) -> None:
        self.ledger.add(usage)
        if ledger is not None and ledger is not self.ledger:
            ledger.add(usage)

    def _model(self, ref: ModelRef) -> Any:
        key = str(ref)
        if key not in self._models:
            from tamesu.models.backends import build_chat_model

            self._models[key] = build_chat_model(ref, self._settings(ref), timeout=self.timeout)
        return self._models[key]

    async def _chat_call(self, ref: ModelRef, request: dict[str, Any]) -> dict[str, Any]:
        if is_gguf_ref(ref):
            from tamesu.models.local_chat import gguf_chat

            return await gguf_chat(ref, request, base_dirs=self.base_dirs)
        from pydantic_ai.direct import model_request
        from pydantic_ai.messages import TextPart, ToolCallPart
        from pydantic_ai.models import ModelRequestParameters
        from pydantic_ai.output import OutputObjectDefinition
        from pydantic_ai.settings import ModelSettings
        from pydantic_ai.tools import ToolDefinition

        model = self._model(ref)
        schema = request["schema"]
        params = ModelRequestParameters(
            function_tools=[
                ToolDefinition(
                    name=t["name"], description=t["description"], parameters_json_schema=t["parameters"]
                )
                for t in request["tools"]
            ],
            output_mode="native" if schema else "text",
            output_object=OutputObjectDefinition(json_schema=schema, name="answer") if schema else None,
        )
        settings: dict[str, Any] = {}
        if request["temperature"] is not None:
            settings["temperature"] = request["temperature"]
        if request["max_tokens"] is not None:
            settings["max_tokens"] = request["max_tokens"]
        if request["seed"] is not None:
            settings["seed"] = request["seed"]
        messages = [ChatMessage(**m) for m in request["messages"]]
        response = await model_request(
            model,
            _to_pydantic_ai(messages),
            model_settings=cast("ModelSettings", settings) if settings else None,
            model_request_parameters=params,
        )
        text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
        calls = [
            {"id": p.tool_call_id, "name": p.tool_name, "args": p.args_as_dict()}
            for p in response.parts
            if isinstance(p, ToolCallPart)
        ]
        data = parse_json_answer(text) if schema else None
        return {
            "text": text,
            "tool_calls": calls,
            "data": data,
            "input_tokens": response.usage.input_tokens,
            "output_tokens": response.usage.output_tokens,
        }

    async def _embed_call(self, ref: ModelRef, request: dict[str, Any]) -> dict[str, Any]:
        key = f"embed:{ref}"
        if key not in self._models:
            from tamesu.models.embedders import build_embedder

            self._models[key] = build_embedder(ref, self._settings_or_local(ref), timeout=self.timeout)
        result = await self._models[key].embed(request["embed"], input_type="document")
        vectors = [list(map(float, v)) for v in result.embeddings]
        usage = getattr(result, "usage", None)
        tokens = int(getattr(usage, "input_tokens", 0) or 0)
        return {"data": vectors, "input_tokens": tokens, "output_tokens": 0}

    def _settings_or_local(self, ref: ModelRef) -> ProviderSettings | None:
        return None if ref.provider == "local" else self._settings(ref)
