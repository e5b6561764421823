"""A LiveKit Agents worker as teams write one: a return-policy agent with one function tool.

It is an ordinary ``livekit-agents`` worker (``AgentServer`` with an ``rtc_session`` entrypoint,
an ``AgentSession``, ``python agent.py dev|start``, the server from ``LIVEKIT_URL``,
``LIVEKIT_API_KEY`` and ``LIVEKIT_API_SECRET``). Only its models are stand-ins that need no hosted
service: ``RulesLLM`` answers by rules (and calls ``lookup_order`` when the caller names an
order), and in audio mode ``livekit_plugins.py`` wraps tamesu's offline Whisper and Piper as
LiveKit STT and TTS plugins. Set ``AGENT_NAME`` to register for explicit dispatch by that name
(unset: dispatched into every new room) and ``AGENT_MODE=audio`` for a voice agent.

    LIVEKIT_URL=ws://127.0.0.1:7880 LIVEKIT_API_KEY=devkey LIVEKIT_API_SECRET=secret python agent.py dev
"""

from __future__ import annotations

import json
import logging
import os
import re
import uuid
from typing import Any

from livekit.agents import (
    Agent,
    AgentServer,
    AgentSession,
    APIConnectOptions,
    JobContext,
    RunContext,
    cli,
    function_tool,
    llm,
    room_io,
)
from livekit.agents.beta.tools import EndCallTool

AUDIO = os.environ.get("AGENT_MODE", "text") == "audio"
if AUDIO:  # plugins register on the worker's main thread, at import
    from livekit_plugins import OfflineSTT, OfflineTTS, OfflineVAD

ORDERS = {"ORD-1001": "delivered on 12 May", "ORD-2002": "still in transit"}
INSTRUCTIONS = "You help customers of an online shop with returns. Returns are accepted within 30 days."
GREETING = "Hello, this is the returns desk. How can I help?"


def answer(user: str, tool_output: str | None) -> tuple[str, dict[str, Any] | None]:
    """The reply to ``user``'s last words: text, or a tool call (name and arguments) to make first."""
    user = re.sub(r"(?<=\d)[, ](?=\d{3}\b)", "", user)  # "1,001" as Whisper writes a spoken number
    said = user.lower()
    order = re.search(
        r"\bORD[\s-]*(\d{4})\b", user.upper()
    )  # spoken: "order 1001", heard as Whisper writes it
    if order is None and "ORDER" in user.upper():
        order = re.search(r"\b(\d{3,4})\b", user)
    if tool_output is not None:
        return f"Your order {tool_output}. You can return it within 30 days of delivery.", None
    if not user:
        return GREETING, None
    if any(word in said for word in ("bye", "that's all", "hang up")):
        return "", {"name": "end_call", "arguments": {}}
    if order is not None:
        return "", {"name": "lookup_order", "arguments": {"order_id": f"ORD-{order.group(1)}"}}
    if "return" in said or "refund" in said:
        return "Sure, I can help with a return. What is your order number?", None
    if "story" in said or "long" in said:
        return "Let me tell you all about our return policy. " + "Every item can come back. " * 8, None
    return "I can help with returns and refunds. What would you like to do?", None


class RulesLLM(llm.LLM):
    """An ``llm.LLM`` that answers by the rules of ``answer``, streaming like a hosted model."""

    def chat(
        self,
        *,
        chat_ctx: llm.ChatContext,
        tools: list[Any] | None = None,
        conn_options: APIConnectOptions = APIConnectOptions(),
        **_: Any,
    ) -> llm.LLMStream:
        return _RulesStream(self, chat_ctx=chat_ctx, tools=tools or [], conn_options=conn_options)


class _RulesStream(llm.LLMStream):
    async def _run(self) -> None:
        items = self.chat_ctx.items
        user, tool_output = "", None
        for item in items:
            if item.type == "message" and item.role == "user":
                user, tool_output = item.text_content or "", None
            elif item.type == "function_call_output" and item.name == "lookup_order":
                tool_output = item.output
            elif item.type == "function_call_output" and item.name == "end_call":
                tool_output = "__end__"
        logging.getLogger("returns-agent").info("heard %r", user)
        if tool_output == "__end__":
            text, call = "Thank you for calling. Goodbye!", None
        else:
            text, call = answer(user, tool_output)
        chunk_id = uuid.uuid4().hex
        if call is not None:
            tool = llm.FunctionToolCall(
                name=call["name"], arguments=json.dumps(call["arguments"]), call_id=f"call_{chunk_id[:8]}"
            )
            self._event_ch.send_nowait(
                llm.ChatChunk(id=chunk_id, delta=llm.ChoiceDelta(role="assistant", tool_calls=[tool]))
            )
            return
        for word in text.split(" "):
            self._event_ch.send_nowait(
                llm.ChatChunk(id=chunk_id, delta=llm.ChoiceDelta(role="assistant", content=word + " "))
            )


class ReturnsAgent(Agent):
    def __init__(self) -> None:
        super().__init__(instructions=INSTRUCTIONS, tools=[EndCallTool(end_instructions="say goodbye")])

    async def on_enter(self) -> None:
        self.session.generate_reply()

    @function_tool
    async def lookup_order(self, context: RunContext, order_id: str) -> str:
        """Look up an order's delivery status by its number (ORD-1234)."""
        status = ORDERS.get(order_id.upper())
        return f"{order_id} was {status}" if status else f"{order_id} was not found"


server = AgentServer()


@server.rtc_session(agent_name=os.environ.get("AGENT_NAME", ""))
async def entrypoint(ctx: JobContext) -> None:
    await ctx.connect()
    if AUDIO:  # turns end on the VAD's end of speech: no cloud turn detector is asked
        session: AgentSession = AgentSession(
            llm=RulesLLM(),
            stt=OfflineSTT(),
            tts=OfflineTTS(),
            vad=OfflineVAD(),
            turn_handling={"turn_detection": "vad"},
        )
    else:  # text turns are committed as they arrive
        session = AgentSession(llm=RulesLLM(), turn_handling={"turn_detection": "manual"})
    options = room_io.RoomOptions(audio_input=AUDIO, audio_output=AUDIO)
    await session.start(agent=ReturnsAgent(), room=ctx.room, room_options=options, record=False)


if __name__ == "__main__":
    cli.run_app(server)
