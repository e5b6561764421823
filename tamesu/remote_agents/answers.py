"""What a remote agent does with a message: answer from the suite's script, or pass it on.

Both are a2a-sdk ``AgentExecutor`` classes, run by the SDK's request handler. ``ScriptedAgent``
answers with the first ``replies`` entry whose ``when`` matches the message (its words, and its
data as JSON), else with ``reply``; each answer is a task in the entry's ``state``: its words and
data as an artifact when completed, as the status message when it asks for input or fails.
``ForwardingAgent`` sends the message on to a real agent's JSON-RPC URL (with ``headers``) and
relays its answer back, so the remote agent is a recording proxy. Both record every message in
and out (``Recording``).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Part, Task, TaskState, TaskStatus

from tamesu.targets.a2a.a2a_parts import data_part, message_data, message_text

if TYPE_CHECKING:
    from a2a.client import Client, ClientCallContext
    from a2a.types.a2a_pb2 import Message

    from tamesu.config.suite import RemoteAgent, RemoteReply
    from tamesu.remote_agents.exchanges import Recording

__all__ = ["ForwardingAgent", "ScriptedAgent"]

_STATES = {
    "completed": TaskState.TASK_STATE_COMPLETED,
    "input-required": TaskState.TASK_STATE_INPUT_REQUIRED,
    "failed": TaskState.TASK_STATE_FAILED,
}
NO_MATCH = "no scripted reply matches this message"


async def _open_task(context: RequestContext, queue: EventQueue) -> TaskUpdater:
    """The task this message belongs to, announced when it is new."""
    if context.current_task is None:
        assert context.message is not None
        await queue.enqueue_event(
            Task(
                id=context.task_id,
                context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[context.message],
            )
        )
    return TaskUpdater(queue, context.task_id or "", context.context_id or "")


async def _finish(updater: TaskUpdater, parts: list[Part], state: int) -> None:
    if state == TaskState.TASK_STATE_COMPLETED:
        if parts:
            await updater.add_artifact(parts, name="reply", last_chunk=True)
        await updater.complete()
    else:
        await updater.update_status(state, message=updater.new_agent_message(parts))  # type: ignore[arg-type]


def matched_text(msg: Message) -> str:
    """What ``when`` is matched against: the words, then each data part as JSON."""
    data = [json.dumps(d, ensure_ascii=False, sort_keys=True) for d in message_data(msg)]
    return "\n".join([message_text(msg), *data])


class ScriptedAgent(AgentExecutor):
    """Answers from ``replies`` / ``reply``; see the module docstring."""

    def __init__(self, name: str, config: RemoteAgent, recording: Recording) -> None:
        self.name = name
        self.recording = recording
        self.replies: list[tuple[re.Pattern[str] | None, RemoteReply]] = [
            (re.compile(r.when) if r.when else None, r) for r in config.replies or []
        ]
        self.reply = config.reply

    def choose(self, text: str) -> tuple[str, Any, str]:
        """(words, data, state) of the answer to a message reading ``text``."""
        for pattern, entry in self.replies:
            if pattern is None or pattern.search(text):
                return entry.say or "", entry.data, entry.state
        if self.reply is not None:
            return self.reply, None, "completed"
        return NO_MATCH, None, "failed"

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        self.recording.message(self.name, "received", context.message, task=context.task_id or "")
        words, data, state = self.choose(matched_text(context.message))
        parts = [Part(text=words)] if words else []
        if data is not None:
            parts.append(data_part(data))
        updater = await _open_task(context, event_queue)
        self.recording.add(
            self.name,
            "replied",
            text=words,
            data=[data] if data is not None else None,
            state=state,
            context=context.context_id or "",
            task=context.task_id or "",
        )
        await _finish(updater, parts, _STATES[state])

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


class ForwardingAgent(AgentExecutor):
    """Passes each message to a real agent and relays its answer; see the module docstring."""

    def __init__(self, name: str, client: Client, call: ClientCallContext, recording: Recording) -> None:
        self.name = name
        self.client = client
        self.call = call
        self.recording = recording
        self.contexts: dict[str, str] = {}
        """Our context id -> the real agent's."""
        self.tasks: dict[str, str] = {}
        """Our task id -> the real agent's task that waits for input."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        from a2a.types.a2a_pb2 import Message, SendMessageRequest

        from tamesu.targets.a2a.a2a_parts import Answer

        assert context.message is not None
        ours_context, ours_task = context.context_id or "", context.task_id or ""
        self.recording.message(self.name, "received", context.message, task=ours_task)
        upstream = Message()
        upstream.CopyFrom(context.message)
        upstream.context_id = self.contexts.get(ours_context, "")
        upstream.task_id = self.tasks.pop(ours_task, "")
        answer = Answer()
        try:
            async for event in self.client.send_message(
                SendMessageRequest(message=upstream), context=self.call
            ):
                answer.add(event)
            await self._settle(answer)
        except Exception as exc:
            # the agent under test sees a failed task; the transcript says why
            text = f"forwarding failed: {type(exc).__name__}: {exc}"
            self.recording.add(
                self.name, "replied", text=text, state="failed", context=ours_context, task=ours_task
            )
            updater = await _open_task(context, event_queue)
            await _finish(updater, [Part(text=text)], TaskState.TASK_STATE_FAILED)
            return
        if answer.context_id:
            self.contexts[ours_context] = answer.context_id
        updater = await _open_task(context, event_queue)
        reply = (
            answer.message
            if answer.message is not None
            else answer.task.status.message
            if answer.task
            else None
        )
        parts = [p for a in answer.task.artifacts for p in a.parts] if answer.task is not None else []
        if reply is not None:
            parts += [p for p in reply.parts if p not in parts]
        state = answer.state or "completed"
        if state == "input-required" and answer.task_id:
            self.tasks[ours_task] = answer.task_id
        self.recording.add(
            self.name,
            "replied",
            text=answer.text(),
            data=[d for p in parts if p.WhichOneof("content") == "data" for d in _data(p)],
            state=state,
            context=ours_context,
            task=ours_task,
        )
        await _finish(updater, parts, _STATES.get(state, TaskState.TASK_STATE_FAILED))

    async def _settle(self, answer: Any) -> None:
        """Wait for a task the real agent is still working on."""
        import asyncio

        from a2a.types.a2a_pb2 import GetTaskRequest

        while not answer.final and answer.task_id:
            await asyncio.sleep(0.2)
            answer.task = await self.client.get_task(GetTaskRequest(id=answer.task_id), context=self.call)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def _data(part: Part) -> list[Any]:
    from google.protobuf.json_format import MessageToDict

    return [MessageToDict(part.data)]
