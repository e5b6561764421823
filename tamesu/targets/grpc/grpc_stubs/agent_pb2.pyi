from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ClientEvent(_message.Message):
    __slots__ = ("start", "user_turn")
    START_FIELD_NUMBER: _ClassVar[int]
    USER_TURN_FIELD_NUMBER: _ClassVar[int]
    start: Start
    user_turn: UserTurn
    def __init__(self, start: _Optional[_Union[Start, _Mapping]] = ..., user_turn: _Optional[_Union[UserTurn, _Mapping]] = ...) -> None: ...

class Start(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class UserTurn(_message.Message):
    __slots__ = ("text", "data")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    text: str
    data: _struct_pb2.Struct
    def __init__(self, text: _Optional[str] = ..., data: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class AgentEvent(_message.Message):
    __slots__ = ("text", "tool_call", "tool_result", "handoff", "turn_end", "session_end")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULT_FIELD_NUMBER: _ClassVar[int]
    HANDOFF_FIELD_NUMBER: _ClassVar[int]
    TURN_END_FIELD_NUMBER: _ClassVar[int]
    SESSION_END_FIELD_NUMBER: _ClassVar[int]
    text: TextDelta
    tool_call: ToolCall
    tool_result: ToolResult
    handoff: Handoff
    turn_end: TurnEnd
    session_end: SessionEnd
    def __init__(self, text: _Optional[_Union[TextDelta, _Mapping]] = ..., tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., tool_result: _Optional[_Union[ToolResult, _Mapping]] = ..., handoff: _Optional[_Union[Handoff, _Mapping]] = ..., turn_end: _Optional[_Union[TurnEnd, _Mapping]] = ..., session_end: _Optional[_Union[SessionEnd, _Mapping]] = ...) -> None: ...

class TextDelta(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("id", "name", "arguments")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    arguments: _struct_pb2.Struct
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ("id", "name", "result")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    result: _struct_pb2.Value
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., result: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...

class Handoff(_message.Message):
    __slots__ = ("to", "summary")
    TO_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    to: str
    summary: str
    def __init__(self, to: _Optional[str] = ..., summary: _Optional[str] = ...) -> None: ...

class TurnEnd(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SessionEnd(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...
