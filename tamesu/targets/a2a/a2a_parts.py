"""Between tamesu's turns and A2A's parts: a user turn as an A2A ``Message``, and an agent's answer
(a message, or a task and its updates) as words, data and the task tamesu records.

The target sends with these and reads the answer with ``Answer``; the remote agents tamesu serves
read what the agent under test sent them with ``message_text`` / ``message_data``. Everything read
from an agent is bounded by the run's ``Limits``: text by ``turn_text``.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.errors import TargetError
from tamesu.limits import DEFAULT_LIMITS, LimitExceeded, Limits

if TYPE_CHECKING:
    from a2a.types.a2a_pb2 import Message, Part, StreamResponse, Task

    from tamesu.kernel.messages import FileRef, UserTurn

__all__ = [
    "FINAL_STATES",
    "STATE_NAMES",
    "Answer",
    "data_part",
    "message_data",
    "message_files",
    "message_text",
    "state_name",
    "to_dict",
    "user_message",
]

STATE_NAMES = {
    1: "submitted",
    2: "working",
    3: "completed",
    4: "failed",
    5: "canceled",
    6: "input-required",
    7: "rejected",
    8: "auth-required",
}
"""``TaskState`` numbers -> the protocol's short names (what errors and events say)."""

FINAL_STATES = frozenset({"completed", "failed", "canceled", "rejected", "input-required", "auth-required"})
"""States that end a turn: the terminal ones, and the ones that wait for the user."""


def state_name(state: int) -> str:
    return STATE_NAMES.get(int(state), "unknown")


def data_part(data: Any) -> Part:
    """A data part holding ``data`` (any JSON value)."""
    from a2a.types.a2a_pb2 import Part
    from google.protobuf.json_format import ParseDict
    from google.protobuf.struct_pb2 import Value

    return Part(data=ParseDict(data, Value()))


def _file_part(ref: FileRef) -> Part:
    """A file part: the bytes of a local file, or a URL the agent fetches itself."""
    import mimetypes

    from a2a.types.a2a_pb2 import Part

    if ref.uri:
        name = ref.name or ref.uri.rstrip("/").rsplit("/", 1)[-1]
        mime = ref.mime or mimetypes.guess_type(name)[0] or ""
        return Part(url=ref.uri, filename=name, media_type=mime)
    path = Path(ref.path or "")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TargetError(
            f"cannot read script file {path}: {exc.strerror or exc}", retryable=False, kind="config"
        ) from None
    mime = ref.mime or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return Part(raw=raw, filename=ref.name or path.name, media_type=mime)


def user_message(
    user: UserTurn, *, context_id: str | None, task_id: str | None, metadata: dict[str, Any] | None
) -> Message:
    """The user's turn as an A2A message: its words, its data as a data part, its files."""
    from a2a.types.a2a_pb2 import Message, Part, Role

    parts = [Part(text=user.text)] if user.text else []
    if user.data is not None:
        parts.append(data_part(user.data))
    parts.extend(_file_part(f) for f in user.files)
    msg = Message(
        role=Role.ROLE_USER,
        message_id=uuid.uuid4().hex,
        parts=parts,
        context_id=context_id or "",
        task_id=task_id or "",
    )
    if metadata:
        msg.metadata.update(metadata)
    return msg


def _texts(parts: Any) -> list[str]:
    return [p.text for p in parts if p.WhichOneof("content") == "text" and p.text]


def message_text(msg: Message) -> str:
    """The words of a message: its text parts, one per line."""
    return "\n".join(_texts(msg.parts))


def message_data(msg: Message) -> list[Any]:
    """The data parts of a message, as JSON values."""
    from google.protobuf.json_format import MessageToDict

    return [MessageToDict(p.data) for p in msg.parts if p.WhichOneof("content") == "data"]


def message_files(msg: Message) -> list[dict[str, Any]]:
    """The file parts of a message: name, media type and URL or size (never the bytes)."""
    out: list[dict[str, Any]] = []
    for p in msg.parts:
        kind = p.WhichOneof("content")
        if kind == "url":
            out.append({"name": p.filename, "mime": p.media_type, "uri": p.url})
        elif kind == "raw":
            out.append({"name": p.filename, "mime": p.media_type, "bytes": len(p.raw)})
    return out


def to_dict(value: Any) -> dict[str, Any]:
    """A protocol object as the JSON the protocol puts on the wire (camelCase keys)."""
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(value)


class Answer:
    """One turn's answer as it arrives: the agent's message, or its task with status and artifacts.

    ``add`` takes each event (a whole task, a status update, an artifact chunk, a message) and
    keeps the task as the agent would report it at the end; ``text`` is what the agent said.
    """

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self.task: Task | None = None
        self.message: Message | None = None
        self.events = 0
        self._chars = 0

    @property
    def state(self) -> str | None:
        """The task's state (None for an answer that is a message, or before anything came)."""
        return state_name(self.task.status.state) if self.task is not None else None

    @property
    def task_id(self) -> str | None:
        return self.task.id if self.task is not None and self.task.id else None

    @property
    def context_id(self) -> str | None:
        if self.message is not None and self.message.context_id:
            return self.message.context_id
        return self.task.context_id if self.task is not None and self.task.context_id else None

    @property
    def final(self) -> bool:
        """Whether the turn is over: a message came, or the task reached a state that ends a turn."""
        return self.message is not None or self.state in FINAL_STATES

    def add(self, event: StreamResponse) -> None:
        from a2a.types.a2a_pb2 import Task

        self.events += 1
        kind = event.WhichOneof("payload")
        if kind == "message":
            self.message = event.message
            self._count(_texts(event.message.parts))
        elif kind == "task":
            self.task = event.task
            self._count(t for a in event.task.artifacts for t in _texts(a.parts))
        elif kind == "status_update":
            update = event.status_update
            if self.task is None:
                self.task = Task(id=update.task_id, context_id=update.context_id)
            self.task.status.CopyFrom(update.status)
        elif kind == "artifact_update":
            self._artifact(event)

    def _artifact(self, event: StreamResponse) -> None:
        from a2a.types.a2a_pb2 import Task

        update = event.artifact_update
        if self.task is None:
            self.task = Task(id=update.task_id, context_id=update.context_id)
        self._count(_texts(update.artifact.parts))
        for artifact in self.task.artifacts:
            if artifact.artifact_id == update.artifact.artifact_id:
                if update.append:
                    artifact.parts.extend(update.artifact.parts)
                else:
                    artifact.CopyFrom(update.artifact)
                return
        self.task.artifacts.append(update.artifact)

    def _count(self, texts: Any) -> None:
        self._chars += sum(len(t) for t in texts)
        if self._chars > self.limits.turn_text:
            raise LimitExceeded(
                f"the agent's answer gathered more than {self.limits.turn_text} characters of text",
                setting="turn_text",
            )

    def text(self) -> str:
        """What the agent said: a message's words, or the task's artifacts then its status message
        (a question when it needs input, the reason when it failed); progress notes are left out."""
        if self.message is not None:
            return message_text(self.message)
        if self.task is None:
            return ""
        pieces = [t for a in self.task.artifacts for t in _texts(a.parts)]
        if self.state in FINAL_STATES:
            pieces += [t for t in _texts(self.task.status.message.parts) if t not in pieces]
        return "\n".join(pieces)

    def body(self) -> dict[str, Any] | None:
        """The task (or the message) as the protocol's JSON: what ``json_path`` reads."""
        if self.message is not None:
            return to_dict(self.message)
        return to_dict(self.task) if self.task is not None else None
