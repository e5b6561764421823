"""Chat calls to a ``local/PATH.gguf`` model: messages in, the router's answer dict out.

Text goes through ``create_chat_completion`` with the file's chat template (or the reference's
``chat_format``). Structured output and tool calls are grammar-constrained JSON, which works with
every template and even with a base model: tools are offered as ``{"tool": NAME, "arguments": {...}}``
next to ``{"reply": ...}``, so a small model cannot answer in a shape tamesu cannot read. A file
without a chat template still answers those JSON calls from a plain transcript; free text from it
is refused, since a base model never stops talking on its own.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import uuid
from collections.abc import Sequence
from typing import Any

from tamesu.errors import ModelError
from tamesu.models.local_gguf import (
    LoadedGGUF,
    gguf_cache,
    import_llama_cpp,
    parse_gguf_name,
    resolve_gguf_path,
)
from tamesu.models.refs import ModelRef

__all__ = ["DEFAULT_MAX_TOKENS", "answer_schema", "gguf_chat"]

DEFAULT_MAX_TOKENS = 1024
"""When a call sets no max_tokens: llama.cpp would otherwise write until the context is full."""


async def gguf_chat(
    ref: ModelRef, request: dict[str, Any], *, base_dirs: Sequence[str | os.PathLike[str]] = ()
) -> dict[str, Any]:
    """One router chat request answered by the GGUF file ``ref`` names, off the event loop."""
    path, options = parse_gguf_name(ref.name)
    file = resolve_gguf_path(path, base_dirs)
    model = await asyncio.to_thread(gguf_cache.get, file, options)
    stop = threading.Event()
    try:
        return await asyncio.to_thread(_answer, model, ref, request, stop)
    except asyncio.CancelledError:
        stop.set()
        raise


def _answer(
    model: LoadedGGUF, ref: ModelRef, request: dict[str, Any], stop: threading.Event
) -> dict[str, Any]:
    tools: list[dict[str, Any]] = request.get("tools") or []
    schema: dict[str, Any] | None = request.get("schema")
    shape = answer_schema(tools, schema) if tools else schema
    messages = _messages(request["messages"], tools, schema)
    sampling: dict[str, Any] = {"max_tokens": request.get("max_tokens") or DEFAULT_MAX_TOKENS}
    for key in ("temperature", "seed"):
        if request.get(key) is not None:
            sampling[key] = request[key]
    if not model.has_chat_template and shape is None:
        raise ModelError(
            "no chat template in this GGUF (a base model?): add ?chat_format=chatml (or another) or use an "
            "instruction-tuned model; only JSON-schema answers and tool calls work without one"
        )
    with model.lock:
        model.stop = stop
        try:
            if model.has_chat_template:
                if shape is not None:
                    sampling["response_format"] = {"type": "json_object", "schema": shape}
                out = model.llama.create_chat_completion(messages=messages, **sampling)
                text = out["choices"][0]["message"].get("content") or ""
            else:
                grammar = import_llama_cpp().LlamaGrammar.from_json_schema(json.dumps(shape), verbose=False)
                out = model.llama.create_completion(prompt=_transcript(messages), grammar=grammar, **sampling)
                text = out["choices"][0]["text"]
        except ModelError:
            raise
        except Exception as exc:
            if stop.is_set():
                raise ModelError(f"{ref}: the call was cancelled") from None
            hint = " (raise n_ctx: local/PATH.gguf?n_ctx=8192)" if "context window" in str(exc) else ""
            raise ModelError(f"{ref}: llama.cpp failed: {type(exc).__name__}: {exc}{hint}") from None
        finally:
            model.stop = None
    usage = out.get("usage") or {}
    answer: dict[str, Any] = {
        "text": text,
        "tool_calls": [],
        "data": None,
        "input_tokens": int(usage.get("prompt_tokens") or 0),
        "output_tokens": int(usage.get("completion_tokens") or 0),
    }
    if shape is None:
        return answer
    value = _json(text, ref, out["choices"][0].get("finish_reason"), sampling["max_tokens"])
    if not tools:
        answer["data"] = value
        return answer
    if "tool" in value:
        call = {
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "name": value["tool"],
            "args": value.get("arguments") or {},
        }
        answer.update(text="", tool_calls=[call])
    else:
        reply = value.get("reply")
        answer.update(
            text=reply if isinstance(reply, str) else json.dumps(reply), data=reply if schema else None
        )
    return answer


def answer_schema(tools: list[dict[str, Any]], schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON an answer may be when tools are offered: one tool call, or a reply (the output
    schema's object when one is asked for, else words)."""
    out: dict[str, Any] = {}
    options: list[dict[str, Any]] = []

    def hoist(part: dict[str, Any]) -> dict[str, Any]:
        """Shared definitions move to the root, where the parts' ``#/$defs/...`` refs point."""
        part = dict(part)
        for key in ("$defs", "definitions"):
            out.setdefault(key, {}).update(part.pop(key, None) or {})
        return part

    for tool in tools:
        params = hoist(tool.get("parameters") or {"type": "object", "properties": {}})
        options.append(_object({"tool": {"const": tool["name"]}, "arguments": params}))
    options.append(_object({"reply": hoist(schema) if schema else {"type": "string"}}))
    out = {key: value for key, value in out.items() if value}
    out["anyOf"] = options
    return out


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _protocol(tools: list[dict[str, Any]], schema: dict[str, Any] | None) -> str:
    reply = "the answer as the JSON asked for" if schema else "your answer in words"
    lines = [
        "Answer with exactly one JSON object: "
        '{"tool": "<tool name>", "arguments": {...}} calls a tool; '
        f'{{"reply": ...}} gives {reply}.',
        "Tools:",
    ]
    for tool in tools:
        params = json.dumps(tool.get("parameters") or {}, separators=(",", ":"))
        lines.append(f"- {tool['name']}: {tool.get('description') or ''} Arguments: {params}")
    return "\n".join(lines)


def _messages(
    raw: list[dict[str, Any]], tools: list[dict[str, Any]], schema: dict[str, Any] | None
) -> list[dict[str, str]]:
    """The router's messages as plain role/content pairs any chat template accepts: one system
    message first, tool traffic as text, no two turns of the same role in a row."""
    system = [m["content"] for m in raw if m["role"] == "system" and m.get("content")]
    if tools:
        system.append(_protocol(tools, schema))
    turns: list[dict[str, str]] = []
    for m in raw:
        role, content = m["role"], m.get("content") or ""
        if role == "system":
            continue
        if role == "tool":
            role, content = "user", f"Result of {m.get('name') or 'the tool'}: {content}"
        elif role == "assistant":
            parts = [json.dumps({"reply": content}) if tools and content else content]
            parts += [
                json.dumps({"tool": c["name"], "arguments": c.get("args") or {}})
                for c in m.get("tool_calls") or []
            ]
            content = "\n".join(p for p in parts if p)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + content
        else:
            turns.append({"role": role, "content": content})
    return ([{"role": "system", "content": "\n\n".join(system)}] if system else []) + turns


def _transcript(messages: list[dict[str, str]]) -> str:
    """A conversation as a plain document a base model continues, ending where the answer goes."""
    names = {"user": "User", "assistant": "Assistant"}
    lines = [
        m["content"] + "\n" if m["role"] == "system" else f"{names[m['role']]}: {m['content']}"
        for m in messages
    ]
    return "\n".join([*lines, "Assistant:"])


def _json(text: str, ref: ModelRef, finish: str | None, max_tokens: int) -> Any:
    try:
        value = json.loads(text)
    except ValueError:
        if finish == "length":
            raise ModelError(
                f"{ref}: the answer was cut off at max_tokens={max_tokens} before its JSON closed"
            ) from None
        raise ModelError(f"{ref}: the answer is not the JSON asked for: {text[:200]!r}") from None
    return value
