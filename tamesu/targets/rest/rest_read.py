"""Reading a rest agent's answers: the ``response:`` JSONPaths, tool calls, and the turn's messages.

Every way a rest agent answers (a JSON body, server-sent events, websocket messages, poll replies,
requests to the local listener) ends up as payloads; ``Reader`` takes text, tool calls and done
out of one payload and ``TurnBuilder`` turns what a turn gathered into run messages, ending with
exactly one ``AgentTurn``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from tamesu.jsonpath import find, find_in_message, truthy
from tamesu.kernel.messages import AgentPartial, AgentTurn, Message, RawResponse, ToolCall
from tamesu.limits import DEFAULT_LIMITS, Limits, check_json_depth, payload_size
from tamesu.targets.handoff import detect_handoff
from tamesu.untrusted import loads_json

if TYPE_CHECKING:
    from tamesu.clock import Clock
    from tamesu.config.target_base import HandoffSignal
    from tamesu.targets.rest.settings import RESTResponse

__all__ = ["Extract", "Reader", "TurnBuilder", "decode_text", "parse_tool_calls"]

_decode = msgspec.json.Decoder().decode
_FALLBACK_KEYS = ("reply", "text", "message", "content", "output", "response", "answer")
"""Read when no ``response.text`` is configured and the payload is an object."""


def decode_text(text: str, depth: int = DEFAULT_LIMITS.json_depth) -> tuple[Any, bool]:
    """(the JSON value, True) when ``text`` is JSON, else (the text, False); JSON nested deeper
    than ``depth`` is a LimitExceeded."""
    stripped = text.strip()
    if not stripped:
        return text, False
    if stripped[0] in "[{":
        check_json_depth(stripped, depth)
    try:
        return _decode(stripped), True
    except msgspec.MsgspecError:
        pass  # what msgspec refuses (NaN, lone surrogates, 1e400) Python's json may still read
    try:
        return loads_json(stripped), True
    except ValueError:
        return text, False


def _args(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        parsed, ok = decode_text(value)
        value = parsed if ok else {"input": value}
    if isinstance(value, dict):
        return value
    return {} if value is None else {"value": value}


def parse_tool_calls(values: list[Any], *, at: float = 0.0) -> list[ToolCall]:
    """Tool calls from JSONPath matches: names, ``{name, args}``, or ``{function: {name, arguments}}``."""
    out: list[ToolCall] = []
    for value in values:
        if isinstance(value, list):
            out.extend(parse_tool_calls(value, at=at))
        elif isinstance(value, str) and value:
            out.append(ToolCall(name=value, at=at))
        elif isinstance(value, dict):
            fn = value.get("function")
            source = fn if isinstance(fn, dict) and fn.get("name") else value
            name = source.get("name") or source.get("tool") or source.get("tool_name")
            if not name:
                continue
            raw_args = next(
                (source[k] for k in ("args", "arguments", "input", "parameters") if k in source), None
            )
            call_id = value.get("id") or value.get("call_id") or value.get("tool_call_id")
            out.append(
                ToolCall(
                    name=str(name), args=_args(raw_args), id=None if call_id is None else str(call_id), at=at
                )
            )
    return out


@dataclass
class Extract:
    """What one payload said."""

    texts: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    done: bool = False
    missed: tuple[str, ...] = ()
    """The configured paths that matched nothing in the payload (``response.text $.reply``)."""

    @property
    def has_content(self) -> bool:
        return bool(self.texts or self.tool_calls or self.done)


def _stringify(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)):
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False)


class Reader:
    """Applies ``response.text`` / ``tool_calls`` / ``done`` / ``turn_done`` to payloads."""

    def __init__(self, response: RESTResponse | None) -> None:
        self.text = getattr(response, "text", None)
        self.tool_calls = getattr(response, "tool_calls", None)
        self.done = getattr(response, "done", None)
        self.turn_done_path = getattr(response, "turn_done", None)
        self.join = getattr(response, "join", None)

    @property
    def needs_json(self) -> bool:
        """Whether answers must be JSON for the configured paths to mean anything."""
        return bool(self.text or self.tool_calls or self.done)

    def read(self, payload: Any, *, message: bool = False, at: float = 0.0) -> Extract:
        """Read one payload; ``message=True`` evaluates paths as on a streamed message ([message])."""
        finder = find_in_message if message else find
        out = Extract()
        missed: list[str] = []
        if self.text:
            if not isinstance(payload, str):
                found = finder(self.text, payload)
                out.texts = [s for s in (_stringify(v) for v in found) if s]
                if not found:
                    missed.append(f"response.text {self.text}")
        else:
            fallback = _fallback_text(payload)
            if fallback:
                out.texts = [fallback]
            elif isinstance(payload, dict):
                missed.append(f"response.text (not set, so the keys {', '.join(_FALLBACK_KEYS)})")
        if self.tool_calls and not isinstance(payload, str):
            found = finder(self.tool_calls, payload)
            out.tool_calls = parse_tool_calls(found, at=at)
            if not found:
                missed.append(f"response.tool_calls {self.tool_calls}")
        if self.done and not isinstance(payload, str):
            found = finder(self.done, payload)
            out.done = truthy(found)
            if not found:
                missed.append(f"response.done {self.done}")
        if missed:
            out.missed = tuple(missed)
        return out

    def turn_done(self, payload: Any) -> bool:
        if not self.turn_done_path or isinstance(payload, str):
            return False
        return truthy(find_in_message(self.turn_done_path, payload))


def _fallback_text(payload: Any) -> str | None:
    if isinstance(payload, str):
        return payload or None
    if isinstance(payload, dict):
        for key in _FALLBACK_KEYS:
            value = payload.get(key)
            if isinstance(value, str) and value:
                return value
    return None


class TurnBuilder:
    """Collects one agent turn and emits its messages in order (raw, partials, tool calls, end)."""

    def __init__(
        self,
        clock: Clock,
        *,
        sent_at: float | None,
        join: str = "",
        partials: bool = False,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self.clock = clock
        self.keep_raw = limits.transcript_size
        """Bytes of raw payloads kept for reading the handoff at the end (an endless stream of
        events without text must not fill the memory before the run's timeout)."""
        self.sent_at = sent_at
        self.join = join
        self.partials = partials
        self.texts: list[str] = []
        self.tool_calls: list[ToolCall] = []
        self.raw: list[Any] = []
        self.done = False
        self.status: int | None = None
        self.first_byte_at: float | None = None
        self.missed: tuple[str, ...] | None = None
        """The paths that matched nothing in every payload so far (None: no payload yet)."""
        self.first: Any = None
        """The turn's first payload, described in the note on a turn nothing was read from."""

    def first_byte(self) -> None:
        if self.first_byte_at is None:
            self.first_byte_at = self.clock.now()

    @property
    def has_content(self) -> bool:
        return bool(self.texts or self.tool_calls or self.done)

    def add(
        self, payload: Any, extract: Extract, *, status: int | None = None, size: int | None = None
    ) -> list[Message]:
        """Record one payload (``size``: its length on the wire, when known) and what was read
        from it; returns the messages to yield now."""
        now = self.clock.now()
        self.first_byte()
        if status is not None:
            self.status = status
        self.keep_raw -= payload_size(payload) if size is None else size
        if self.keep_raw >= 0:
            self.raw.append(payload)
        out: list[Message] = [RawResponse(body=payload, status=status, at=now)]
        if self.missed is None:
            self.missed, self.first = extract.missed, payload
        elif self.missed:
            self.missed = tuple(m for m in self.missed if m in extract.missed)
        for text in extract.texts:
            self.texts.append(text)
            if self.partials:
                out.append(AgentPartial(text=text, at=now))
        for call in extract.tool_calls:
            self.tool_calls.append(call)
            out.append(call)
        self.done = self.done or extract.done
        return out

    @property
    def text(self) -> str:
        return self.join.join(self.texts)

    def unread(self) -> str | None:
        """Why nothing was read from the answers of this turn, when a path matched none of them
        (an answer of 400 or more is the agent refusing, not a path that is wrong)."""
        if self.has_content or not self.missed or (self.status or 0) >= 400:
            return None
        return f"{'; '.join(self.missed)} matched nothing; {_shape(self.first)}"

    def finish(self, handoff: HandoffSignal | None = None) -> list[Message]:
        """The Handoff (when ``handoff`` recognises one) and the closing AgentTurn."""
        end = self.clock.now()
        out: list[Message] = []
        found = detect_handoff(handoff, text=self.text, tool_calls=self.tool_calls, raw=self.raw, at=end)
        if found is not None:
            out.append(found)
        out.append(
            AgentTurn(
                text=self.text,
                done=self.done,
                status=self.status,
                sent_at=self.sent_at,
                first_byte_at=self.first_byte_at,
                end_at=end,
                at=end,
                unread=self.unread(),
            )
        )
        return out


_KEYS_SHOWN = 12


def _shape(payload: Any) -> str:
    """``the reply's keys: answer, id`` (at most a dozen, each cut short), or what else it was."""
    if isinstance(payload, dict):
        keys = [str(k)[:40] for k in list(payload)[:_KEYS_SHOWN]]
        more = f" (+{len(payload) - _KEYS_SHOWN} more)" if len(payload) > _KEYS_SHOWN else ""
        return f"the reply's keys: {', '.join(keys) or '(none)'}{more}"
    if isinstance(payload, list):
        return f"the reply is a list of {len(payload)}"
    return f"the reply is {type(payload).__name__}"
