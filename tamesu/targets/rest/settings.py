"""The rest target: any HTTP agent, answering per request, by server-sent events, on a websocket,
through an endpoint tamesu polls, or by calling an API tamesu serves."""

from typing import Any, Literal

from pydantic import ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from tamesu.config.common import ConfigModel, Duration, F, HttpMethod, HttpStatus, StrMap, set_schema
from tamesu.config.kinds import target_type
from tamesu.config.target_base import SAY, TalkingTarget, WithHeaders

__all__ = ["HandshakeStep", "RESTListen", "RESTPoll", "RESTRequest", "RESTResponse", "RestTarget"]


class HandshakeStep(ConfigModel):
    """One exchange right after a websocket connects: send a message, optionally wait for the answer."""

    send: Any = F(
        "The message to send; for socket.io a mapping with event and data.",
        {"event": "session.create", "data": {}},
        default=None,
    )
    wait: str | None = F(
        "A JSONPath that must be truthy on some received message before going on.",
        "$[?(@.event=='session.created')].event",
        default=None,
    )
    capture: StrMap | None = F(
        "Values to keep from the awaited message, by name, as JSONPaths; they render as {{session.NAME}}.",
        {"session_key": "$[?(@.event=='session.created')].data.sessionKey"},
        default=None,
    )
    timeout: Duration | None = F(
        "The longest to wait for the message; the turn timeout when unset.", "10s", default=None
    )


class RESTRequest(ConfigModel):
    """How a user turn is sent to a rest target."""

    body: Any = F(
        "The body template; {{message}} is the user's turn and {{session}} the session id.",
        {"session_id": "{{session}}", "message": "{{message}}"},
        default=None,
    )
    open: Any = F(
        "streaming websocket: a message sent once, right after connecting.",
        {"type": "open", "session_id": "{{session}}"},
        default=None,
    )
    capture: StrMap | None = F(
        "With response.poll: values to keep from the answer to the sent request, by name (JSONPaths); "
        "they render as {{sent.NAME}} in that turn's polls.",
        {"ts": "$.ts"},
        default=None,
    )
    handshake: list[HandshakeStep] | None = F(
        "streaming websocket: exchanges made once after connecting (after open); each may wait for a "
        "message and keep values from it as {{session.NAME}}.",
        [
            {
                "send": {
                    "event": "client.start",
                    "data": {
                        "userID": "{{session}}",
                        "projectID": "{{vars.project_id}}",
                        "authorization": "{{secrets.VF_KEY}}",
                    },
                },
                "wait": "$[?(@.event=='client.started')].event",
            }
        ],
        default=None,
    )


class RESTPoll(ConfigModel):
    """An endpoint polled for the agent's answer after each turn (a chat channel's history)."""

    url: str = F(
        "What to poll; {{session.NAME}}, {{sent.NAME}} and {{cursor}} render in it.",
        "https://slack.com/api/conversations.replies?channel={{vars.channel}}&ts={{sent.ts}}",
    )
    method: HttpMethod = F("The HTTP method.", "GET", default="GET")
    headers: StrMap | None = F(
        "Request headers; templates render in them.",
        {"Authorization": "Bearer {{secrets.SLACK_USER_TOKEN}}"},
        default=None,
    )
    body: Any = F(
        "The body template; nothing is sent when unset.", {"conversation": "{{session.id}}"}, default=None
    )
    interval: Duration = F("Pause between two polls.", "1s", default="500ms")
    timeout: Duration = F("How long to wait for an answer before the turn fails.", "30s", default="60s")
    idle: Duration | None = F(
        "After the first answer, keep polling until nothing new arrives for this long (agents that "
        "answer in several messages); unset ends the turn at the first answer.",
        "3s",
        default=None,
    )
    cursor: str | None = F(
        "A JSONPath into each poll answer whose value becomes {{cursor}} in the next poll; with it answers "
        "add up, without it each poll replaces the previous one.",
        "$.watermark",
        default=None,
    )


class RESTListen(ConfigModel):
    """A local API the agent calls to answer (a bot replying through its platform's send endpoint)."""

    addr: str | None = F(
        "host:port to listen on; a free 127.0.0.1 port when unset. Its URL renders as {{listen.url}}.",
        "127.0.0.1:8089",
        default=None,
    )
    path: str | None = F(
        "Which requests carry the agent's replies: an optional method, then a path with * wildcards; a "
        "trailing / matches a prefix. Every request when unset; the others are answered but not read.",
        "POST /bot*/sendMessage",
        default=None,
    )
    session: str | None = F(
        "A JSONPath to the session id in the incoming payload, to route requests when tests run in "
        "parallel; the oldest open session when unset.",
        "$.chat_id",
        default=None,
    )
    reply: Any = F(
        "The JSON answered to the agent's requests; templates render in it.",
        {"ok": True, "result": {"message_id": 1}},
        default_factory=lambda: {"ok": True},
    )
    status: HttpStatus = F("The status answered.", 200, default=200)
    timeout: Duration = F(
        "Time allowed for the agent's call to arrive; the turn fails after it.", "30s", default="60s"
    )
    idle: Duration | None = F(
        "After the first reply, keep listening until nothing new arrives for this long; unset ends the "
        "turn at the first request with content.",
        "1s",
        default=None,
    )


class RESTResponse(ConfigModel):
    """How the agent's turn is read from a rest target's answers (JSONPaths)."""

    model_config = ConfigDict(json_schema_extra={"not": set_schema("poll", "listen")})

    text: str | None = F("Where the reply text sits in the answer (a JSONPath).", "$.reply", default=None)
    tool_calls: str | None = F(
        "JSONPath of the names of the tools the agent called.", "$.tool_calls[*]", default=None
    )
    done: str | None = F("JSONPath of a boolean that ends the conversation.", "$.end_session", default=None)
    turn_done: str | None = F(
        "streaming websocket: JSONPath of a boolean that ends the turn; without it, silence does.",
        "$.done",
        default=None,
    )
    idle: Duration | None = F(
        "streaming websocket: the silence that ends a turn when no message marks its end (2s when unset).",
        "2s",
        default=None,
    )
    join: str | None = F(
        "Plain JSON: what goes between several text matches of one reply; nothing when unset.",
        "\n",
        default=None,
    )
    poll: RESTPoll | None = F(
        "The answer arrives elsewhere: poll this endpoint after each turn and read text, tool_calls and "
        "done from what it returns.",
        {
            "url": "{{vars.api}}/conversations/{{session.id}}/activities?watermark={{cursor}}",
            "cursor": "$.watermark",
        },
        default=None,
    )
    listen: RESTListen | None = F(
        "The answer arrives as a call to an API: serve it locally and read text, tool_calls and done from "
        "the agent's requests.",
        {"addr": "127.0.0.1:8089", "path": "POST /bot*/sendMessage", "session": "$.chat_id"},
        default=None,
    )

    @model_validator(mode="after")
    def _poll_or_listen(self) -> "RESTResponse":
        if self.poll is not None and self.listen is not None:
            raise PydanticCustomError("poll_and_listen", "response takes poll or listen, not both")
        return self


_WEBSOCKET: dict[str, Any] = {"required": ["streaming"], "properties": {"streaming": {"const": "websocket"}}}


@target_type(
    "rest",
    adapter="tamesu.targets.rest.adapter:RestAdapter",
    parts={"text": SAY},
    summary="Any HTTP agent: JSON per request, server-sent events, a WebSocket (JSON or socket.io), a poll "
    "endpoint, or an agent that answers by calling you",
)
class RestTarget(TalkingTarget, WithHeaders):
    """An HTTP agent: one request per user turn, its answer read with JSONPaths."""

    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                {"if": set_schema("protocol"), "then": _WEBSOCKET},
                {
                    "if": {"not": _WEBSOCKET},
                    "then": {
                        "properties": {
                            "request": {
                                "properties": {"open": {"type": "null"}, "handshake": {"type": "null"}}
                            },
                            "response": {
                                "properties": {"turn_done": {"type": "null"}, "idle": {"type": "null"}}
                            },
                        }
                    },
                },
                {
                    "if": {
                        "required": ["request"],
                        "properties": {"request": {"type": "object", **set_schema("capture")}},
                    },
                    "then": {
                        "required": ["response"],
                        "properties": {"response": {"type": "object", **set_schema("poll")}},
                    },
                },
            ]
        }
    )

    type: Literal["rest"] = F("What kind of system this is; it decides which other keys apply.", "rest")
    url: str = F("The endpoint each turn is sent to.", "${AGENT_URL:-http://localhost:8080/chat}")
    method: HttpMethod = F("HTTP method of each turn's request.", "POST", default="POST")
    request: RESTRequest | None = F(
        "Shape of the request carrying each user message.",
        {"body": {"session_id": "{{session}}", "message": "{{message}}"}},
        default=None,
    )
    response: RESTResponse | None = F(
        "How the agent's turn is read back (JSONPaths into the answer).",
        {"text": "$.reply", "tool_calls": "$.tool_calls[*]", "done": "$.end_session"},
        default=None,
    )
    streaming: Literal["none", "sse", "websocket"] = F(
        "How answers arrive: one response per turn (none), server-sent events, or a websocket.",
        "sse",
        default="none",
    )
    protocol: Literal["socketio"] | None = F(
        "socketio: the websocket speaks socket.io (streaming: websocket only).", "socketio", default=None
    )

    @model_validator(mode="after")
    def _websocket_keys(self) -> "RestTarget":
        def fail(message: str) -> None:
            raise PydanticCustomError("target_rule", message)

        if self.protocol is not None and self.streaming != "websocket":
            fail("protocol: socketio applies with streaming: websocket")
        if self.streaming != "websocket":
            ws_only = [
                k
                for k, v in (
                    ("request.open", self.request and self.request.open),
                    ("request.handshake", self.request and self.request.handshake),
                    ("response.turn_done", self.response and self.response.turn_done),
                    ("response.idle", self.response and self.response.idle),
                )
                if v is not None
            ]
            if ws_only:
                fail(f"{', '.join(ws_only)} apply with streaming: websocket")
        if self.request and self.request.capture is not None and not (self.response and self.response.poll):
            fail("request.capture applies with response.poll")
        return self
