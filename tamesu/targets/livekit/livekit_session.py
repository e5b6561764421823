"""A LiveKit Agents session's events, as the livekit target reads them from the room.

``AgentSession`` (livekit-agents 1.x) publishes what it does to the room as ``lk.agent.session``
byte streams, each one ``agent_session.AgentSessionMessage``. Three kinds matter to a test: the
function tools it executed (calls with their JSON arguments and their outputs), its state
(listening, thinking, speaking: what ``lk.agent.state`` says), and the errors it reports. The
agent under test wrote them, so every value is bounded and a message that does not parse is a
problem, not a crash.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tamesu.kernel.messages import ToolCall, ToolResult

__all__ = ["session_items"]

STATES = {"AS_INITIALIZING": "initializing", "AS_IDLE": "idle", "AS_LISTENING": "listening",
          "AS_THINKING": "thinking", "AS_SPEAKING": "speaking"}  # fmt: skip
"""The session's states by their protobuf names, as ``lk.agent.state`` spells them."""


def _arguments(text: str, max_chars: int) -> dict[str, Any]:
    try:
        value = json.loads(text[:max_chars]) if text else {}
    except ValueError:
        return {"_raw": text[:max_chars]}
    return value if isinstance(value, dict) else {"_value": value}


def session_items(data: bytes, max_chars: int) -> Iterator[tuple[str, Any]]:
    """("tool", ToolCall) / ("tool_result", ToolResult) / ("state", name) / ("problem", text) of one message."""
    from livekit.protocol.agent_pb import agent_session as pb

    message = pb.AgentSessionMessage()
    try:
        message.ParseFromString(data)
    except Exception:
        yield "problem", f"an unreadable {len(data)}-byte session event"
        return
    if not message.HasField("event"):
        return
    event = message.event
    kind = event.WhichOneof("event")
    if kind == "function_tools_executed":
        executed = event.function_tools_executed
        for call in executed.function_calls:
            yield (
                "tool",
                ToolCall(
                    name=call.name[:200],
                    args=_arguments(call.arguments, max_chars),
                    id=call.call_id[:200] or None,
                ),
            )
        for output in executed.function_call_outputs:
            result: Any = output.output[:max_chars]
            if output.is_error:
                result = {"error": result}
            yield (
                "tool_result",
                ToolResult(name=output.name[:200], result=result, id=output.call_id[:200] or None),
            )
    elif kind == "agent_state_changed":
        try:
            name = pb.AgentState.Name(event.agent_state_changed.new_state)
        except ValueError:
            return
        yield "state", STATES.get(name, name.lower())
    elif kind == "error":
        yield "problem", f"the agent's session reported an error: {event.error.message[:max_chars]}"
