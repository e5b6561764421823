"""The systems under test: one flat ``Target`` object whose ``type`` decides which keys apply.

``TARGET_KEY_TYPES`` is the single table of which key applies to which target type (read from the
reference, key by key); ``TARGET_KEYS`` is the same table turned around. A key that does not apply
to the target's type is rejected with a message naming the types that take it, and the JSON
Schema carries the same table as if/then rules so editors flag misplaced keys too.
"""

from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from tamesu.config.common import (
    ConfigModel,
    Duration,
    F,
    HandshakeStep,
    HttpMethod,
    HttpStatus,
    HTTPTrigger,
    PositiveInt,
    RESTListen,
    RESTOpen,
    RESTPoll,
    RESTRequest,
    RESTResponse,
    RESTSession,
    ShortForm,
    StrMap,
    exactly_one,
    one_of_schema,
    set_schema,
)

__all__ = [
    "TARGET_KEYS",
    "TARGET_KEY_TYPES",
    "TARGET_REQUIRED",
    "TARGET_TYPES",
    "BrowserAuth",
    "BrowserMock",
    "BrowserOptions",
    "ConnectConfig",
    "Dispatch",
    "HandoffSignal",
    "HandshakeStep",
    "Push",
    "RESTListen",
    "RESTOpen",
    "RESTPoll",
    "RESTRequest",
    "RESTResponse",
    "RESTSession",
    "Target",
    "TargetType",
    "ToolDef",
    "Trigger",
    "VoiceAudio",
    "VoiceMessages",
]

TargetType = Literal[
    "browser",
    "rest",
    "livekit",
    "sip",
    "realtime",
    "grpc",
    "pipecat",
    "model",
    "twilio",
    "mcp",
    "a2a",
    "voice",
]
TARGET_TYPES: tuple[str, ...] = TargetType.__args__  # type: ignore[attr-defined]

_ALL = " ".join(TARGET_TYPES)
_TALKING = " ".join(t for t in TARGET_TYPES if t != "browser")

TARGET_KEY_TYPES: dict[str, str] = {
    "type": _ALL,
    "url": "browser rest livekit realtime grpc pipecat twilio mcp a2a voice",
    "connect": _TALKING,
    "handoff": _TALKING,
    "browser": "browser",
    "auth": "browser",
    "allowed_domains": "browser",
    "method": "rest",
    "headers": "rest a2a realtime pipecat twilio voice grpc mcp",
    "request": "rest",
    "response": "rest",
    "streaming": "rest",
    "session": _ALL,
    "api_key": "livekit",
    "api_secret": "livekit",
    "token": "livekit",
    "identity": "livekit",
    "room": "livekit sip",
    "dispatch": "livekit",
    "agent_identity_prefix": "livekit",
    "mode": "livekit realtime pipecat",
    "data_topic": "livekit",
    "join_timeout": "livekit",
    "transcript_source": "livekit sip realtime pipecat twilio voice",
    "direction": "sip",
    "to": "sip twilio",
    "from": "sip twilio",
    "trunk_id": "sip",
    "ring_timeout": "sip",
    "max_call_duration": "sip",
    "trigger": "sip",
    "model": "realtime model mcp",
    "session_update": "realtime",
    "protocol": "realtime rest",
    "done_tool": "realtime model mcp",
    "turn_timeout": "realtime grpc pipecat a2a voice",
    "tool_results": "realtime pipecat",
    "audio_format": "realtime",
    "sample_rate": "pipecat",
    "idle": "pipecat twilio voice",
    "parameters": "twilio",
    "command": "mcp",
    "args": "mcp",
    "env": "mcp",
    "allow_tools": "mcp",
    "call_timeout": "mcp",
    "audio": "voice",
    "messages": "voice",
    "stream": "a2a",
    "skill": "a2a",
    "metadata": "a2a",
    "transport": "a2a",
    "push": "a2a",
    "system": "model mcp",
    "system_file": "model mcp",
    "tools": "model",
    "temperature": "model mcp",
    "max_tokens": "model mcp",
    "max_tool_rounds": "model mcp",
    "fallback": "model mcp",
}
"""YAML key -> the target types it applies to (space separated). A new key or type is one edit here."""

TARGET_KEYS: dict[str, set[str]] = {
    t: {k for k, types in TARGET_KEY_TYPES.items() if t in types.split()} for t in TARGET_TYPES
}
"""Target type -> the YAML keys that apply to it."""

TARGET_REQUIRED: dict[str, tuple[str, ...]] = {
    t: ("url",) for t in ("browser", "rest", "grpc", "pipecat", "twilio", "a2a", "voice")
}
"""Target type -> keys it cannot do without (alternatives such as model's system or system_file aside)."""

_APPLIES: dict[str, frozenset[str]] = {k: frozenset(v.split()) for k, v in TARGET_KEY_TYPES.items()}


class ConnectConfig(ConfigModel):
    """Retries of the first connection when the agent refuses it or answers 5xx."""

    attempts: PositiveInt = F("Tries in all; 1 means no retry.", 5, default=3)
    backoff: Duration = F(
        "Wait before the second try; it doubles each try, with jitter.", "1s", default="500ms"
    )
    max_backoff: Duration = F("Upper bound of the wait between tries.", "10s", default="5s")


class HandoffSignal(ConfigModel):
    """How the agent shows it handed the conversation to a person, and where to read to whom and why."""

    model_config = ConfigDict(json_schema_extra=one_of_schema(("tool", "json_path", "regex")))

    tool: str | None = F("A tool call that means a handoff.", "transfer_to_human", default=None)
    json_path: str | None = F(
        "A path in the raw response that is present and not false on a handoff (rest, websocket, realtime).",
        "$.handoff",
        default=None,
    )
    regex: str | None = F(
        "Pattern in the agent's reply that signals a handoff.",
        r"(?i)transferring you to (\w+)",
        default=None,
    )
    to: str | None = F(
        "Where the destination is: a tool argument name or a JSONPath into the response; "
        "with regex alone, the first group.",
        "department",
        default=None,
    )
    summary: str | None = F(
        "Where the note for the person is: a tool argument name or a JSONPath into the response.",
        "$.handoff.note",
        default=None,
    )

    @model_validator(mode="before")
    @classmethod
    def _one_signal(cls, data: Any) -> Any:
        exactly_one(data, ("tool", "json_path", "regex"), "handoff", allowed=("to", "summary"))
        return data


class BrowserMock(ConfigModel):
    """A request the browser never sends to the network: tamesu answers it."""

    url: str = F("A glob on the full URL (** crosses slashes) or a plain substring.", "**/api/stock*")
    method: HttpMethod | None = F(
        "Only requests with this method; any method when unset.", "GET", default=None
    )
    status: HttpStatus = F("Status code of the made-up answer.", 503, default=200)
    body: Any = F(
        "The made-up answer: a string as it is, anything else as JSON.",
        {"error": "warehouse unavailable"},
        default=None,
    )
    headers: StrMap | None = F(
        "Headers of the made-up answer.",
        {"Content-Type": "application/json", "Retry-After": "30"},
        default=None,
    )
    delay_ms: int = F("Milliseconds to hold the answer back.", 2000, default=0, ge=0)
    abort: bool = F("Make the request fail instead of answering it.", True, default=False)


class BrowserOptions(ConfigModel):
    """How the browser of a browser target is set up."""

    engine: Literal["chromium"] = F(
        "The browser engine; Chromium is the only one.", "chromium", default="chromium"
    )
    viewport: str | None = F(
        "Window size as WIDTHxHEIGHT.", "1280x800", default=None, pattern=r"^[1-9][0-9]*x[1-9][0-9]*$"
    )
    locale: str | None = F("Browser locale; it also sets Accept-Language.", "en-GB", default=None)
    mocks: list[BrowserMock] = F(
        "Requests answered by tamesu from the first page on; the mock action adds more during a test.",
        [{"url": "**/api/stock*", "status": 200, "body": {"stock": 0}}],
        default_factory=list,
    )
    recording: Literal["auto", "gif", "webm", "off"] = F(
        "The screen recording kept with the screenshots: auto picks webm when ffmpeg is present and gif "
        "otherwise; off records nothing.",
        "webm",
        default="auto",
    )


class BrowserAuth(ConfigModel):
    """Start the browser already signed in."""

    storage_state: str | None = F(
        "A saved storage state file (cookies and local storage).", "auth/state.json", default=None
    )


class Dispatch(ConfigModel):
    """An explicit LiveKit agent dispatch into the test's room."""

    agent_name: str = F("The agent name to dispatch.", "support-agent")


class Trigger(ConfigModel):
    """What makes an inbound agent place its call to sip.inbound_number."""

    model_config = ConfigDict(json_schema_extra=one_of_schema(("http", "command")))

    http: HTTPTrigger | None = F(
        "A request to your system asking the agent to phone tamesu.",
        {"url": "https://agent.example/call", "method": "POST", "body": {"to": "{{env.INBOUND}}"}},
        default=None,
    )
    command: str | None = F(
        "A shell command that makes the agent call.", "./scripts/call.sh {{env.INBOUND}}", default=None
    )

    @model_validator(mode="before")
    @classmethod
    def _one_way(cls, data: Any) -> Any:
        exactly_one(data, ("http", "command"), "trigger")
        return data


class ToolDef(ConfigModel):
    """A tool offered to a model target, with the answer tamesu gives when it is called."""

    name: str = F("The name the model calls the tool by.", "lookup_policy", min_length=1)
    description: str | None = F(
        "What the tool is for; the model reads it to decide when to call it.",
        "The store policy for a topic",
        default=None,
    )
    parameters: dict[str, Any] | None = F(
        "JSON Schema (an object schema) of the arguments; no arguments when unset.",
        {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]},
        default=None,
        json_schema_extra={"properties": {"type": {"const": "object"}}},
    )
    result: Any = F(
        "What a call returns to the model (any JSON; string leaves may use {{args.NAME}}).",
        {"topic": "{{args.topic}}", "window_days": 30},
        default=None,
    )

    @field_validator("parameters")
    @classmethod
    def _object_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None and value.get("type", "object") != "object":
            raise PydanticCustomError("tool_parameters", "parameters must be an object schema (type: object)")
        return value


class VoiceAudio(ConfigModel):
    """How audio travels on a voice target's websocket."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": ["frames"], "properties": {"frames": {"const": "json"}}},
                {"properties": {"send": {"type": "null"}, "receive": {"type": "null"}}},
            ]
        }
    )

    encoding: Literal["pcm16", "mulaw", "alaw"] = F("Encoding on the wire.", "mulaw", default="pcm16")
    sample_rate: PositiveInt | None = F(
        "Samples per second; 16000 for pcm16 and 8000 for mulaw and alaw when unset.", 8000, default=None
    )
    frames: Literal["binary", "json"] = F(
        "binary: each chunk is one binary frame; json: each chunk is base64 inside a JSON message (see send "
        "and receive).",
        "json",
        default="binary",
    )
    send: Any = F(
        "frames json: the message sent per outgoing chunk; {{audio}} is the base64 chunk.",
        {"user_audio_chunk": "{{audio}}"},
        default=None,
    )
    receive: str | None = F(
        "frames json: JSONPath of the base64 audio in an incoming message, applied to a one-element list.",
        "$[*].audio_event.audio_base_64",
        default=None,
    )

    @model_validator(mode="after")
    def _json_frames(self) -> "VoiceAudio":
        if self.frames != "json" and (self.send is not None or self.receive is not None):
            raise PydanticCustomError("voice_frames", "send and receive apply to frames: json")
        return self


class VoiceMessages(ConfigModel):
    """The JSON control messages of a voice target's protocol; every one is optional."""

    open: Any = F(
        "A message sent once after connecting.",
        {"type": "start", "call_id": "{{session.call_id}}"},
        default=None,
    )
    transcript: str | None = F(
        "JSONPath of the agent's final words in a message (applied to a one-element list); without it the "
        "agent's audio is transcribed.",
        "$[?(@.type=='transcript' && @.role=='assistant' && @.transcriptType=='final')].transcript",
        default=None,
    )
    done: str | None = F(
        "JSONPath truthy on the message marking the end of the call.",
        "$[?(@.type=='status-update' && @.status=='ended')].status",
        default=None,
    )
    interrupted: str | None = F(
        "JSONPath that is truthy when the agent stopped talking because the caller did.",
        "$[?(@.type=='user-interrupted')].type",
        default=None,
    )
    tool_calls: str | None = F(
        "JSONPath of the tool calls in a message: names, or objects with name/args (or function.name/arguments).",
        "$[?(@.type=='tool-calls')].toolCallList[*]",
        default=None,
    )
    dtmf: Any = F(
        "A message sent per keypad digit ({{digit}} renders); without it dtmf steps are recorded as unsupported.",
        {"type": "dtmf", "digit": "{{digit}}"},
        default=None,
    )
    close: Any = F(
        "A message sent before closing the connection (a hangup).", {"type": "hangup"}, default=None
    )


class Push(ShortForm):
    """a2a push notifications: tamesu listens for task updates instead of polling."""

    __short_field__: ClassVar[str] = "enabled"
    __short_types__: ClassVar[tuple[type, ...]] = (bool,)
    __short_schema__: ClassVar[dict[str, Any]] = {
        "type": "boolean",
        "description": "true listens on a free local port; false turns push off.",
    }

    enabled: bool = F("false turns push notifications off.", True, default=True)
    addr: str | None = F(
        "host:port to listen on; a free 127.0.0.1 port when unset.", "0.0.0.0:8099", default=None
    )
    url: str | None = F(
        "The URL the agent should call when it reaches tamesu by another address (a tunnel, a container).",
        "https://tamesu.tunnel.example.com",
        default=None,
    )


class Target(ConfigModel):
    """One system under test. Every key but type is optional; type decides which keys apply (TARGET_KEYS)."""

    model_config = ConfigDict(json_schema_extra=lambda schema, cls: _target_schema(schema))

    type: TargetType = F("What kind of system this is; it decides which other keys apply.", "rest")
    url: str | None = F(
        "The page (browser), the endpoint (rest, realtime, pipecat, twilio, a2a, voice, mcp over HTTP), "
        "grpc://host:port (grpc) or the LiveKit server (livekit).",
        "${AGENT_URL:-http://localhost:8080/chat}",
        default=None,
    )
    connect: ConnectConfig | None = F(
        "Retries of the first connection to the agent.",
        {"attempts": 5, "backoff": "1s", "max_backoff": "10s"},
        default=None,
    )
    handoff: HandoffSignal | None = F(
        "How to tell that the agent passed the conversation to a person, and to whom.",
        {"tool": "transfer_to_human", "to": "department", "summary": "summary"},
        default=None,
    )
    browser: BrowserOptions | None = F(
        "Browser set-up: engine, viewport, locale, mocks, recording.",
        {"viewport": "1280x800", "locale": "en-GB", "recording": "gif"},
        default=None,
    )
    auth: BrowserAuth | None = F(
        "Start signed in, from a saved storage state.", {"storage_state": "auth/state.json"}, default=None
    )
    allowed_domains: list[str] | None = F(
        "Domains the browser agent may visit; the url's domain when unset.",
        ["shop.example", "cdn.example"],
        default=None,
    )
    method: HttpMethod = F("HTTP method of each turn's request.", "POST", default="POST")
    headers: StrMap | None = F(
        "Request headers (rest, a2a, mcp over HTTP), handshake headers (realtime, pipecat, twilio, voice) or "
        "call metadata (grpc); write credentials as {{secrets.NAME}}.",
        {"Authorization": "Bearer {{secrets.AGENT_TOKEN}}"},
        default=None,
    )
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
    session: RESTSession | None = F(
        "The session id template and an optional session.open request made once per run, whose captures "
        "render as {{session.NAME}} in this target's settings.",
        {"id": "{{uuid}}"},
        default=None,
    )
    api_key: str | None = F(
        "LiveKit API key; write it as {{secrets.NAME}}.", "{{secrets.LIVEKIT_API_KEY}}", default=None
    )
    api_secret: str | None = F(
        "LiveKit API secret; write it as {{secrets.NAME}}.", "{{secrets.LIVEKIT_API_SECRET}}", default=None
    )
    token: str | None = F(
        "A ready access token used instead of api_key and api_secret (often a session.open capture); the "
        "caller's identity comes from it.",
        "{{session.access_token}}",
        default=None,
    )
    identity: str | None = F(
        "The simulated caller's participant identity; a unique tamesu-sim- name when unset.",
        "web-user-9",
        default=None,
    )
    room: str = F("Template of the room name.", "tamesu-{{uuid}}", default="tamesu-{{uuid}}")
    dispatch: Dispatch | None = F(
        "Dispatch this agent into the room explicitly.", {"agent_name": "support-agent"}, default=None
    )
    agent_identity_prefix: str | None = F(
        "Identity prefix of the agent participant; participants of kind agent when unset.",
        "agent-",
        default=None,
    )
    mode: Literal["text", "audio"] = F("Talk in text or in audio.", "audio", default="text")
    data_topic: str = F("The topic text messages travel on in text mode.", "lk.chat", default="lk.chat")
    join_timeout: Duration = F("How long the agent has to join the room.", "20s", default="20s")
    transcript_source: Literal["auto", "agent", "stt"] = F(
        "Audio: where the agent's words come from; auto uses the agent's own transcription when it "
        "publishes one and transcribes its audio otherwise.",
        "stt",
        default="auto",
    )
    direction: Literal["outbound", "inbound"] = F(
        "outbound: tamesu calls the agent; inbound: a trigger makes the agent call tamesu.",
        "outbound",
        default="outbound",
    )
    to: str | None = F(
        "sip: the agent's number in E.164 (outbound); twilio: the To passed in customParameters.",
        "+34910000000",
        default=None,
    )
    from_: str | None = F(
        "sip: the caller ID the trunk presents; twilio: the From passed in customParameters.",
        "+34600000000",
        default=None,
        alias="from",
    )
    trunk_id: str | None = F(
        "LiveKit SIP trunk to call through; sip.outbound_trunk_id when unset.", "ST_abc123", default=None
    )
    ring_timeout: Duration | None = F(
        "Ringing time allowed before the call ends as no_answer.", "30s", default=None
    )
    max_call_duration: Duration | None = F("The call is hung up after this long.", "5m", default=None)
    trigger: Trigger | None = F(
        "inbound: the command or HTTP request that makes the agent dial sip.inbound_number.",
        {"http": {"url": "https://agent.example/call", "method": "POST", "body": {"to": "{{env.INBOUND}}"}}},
        default=None,
    )
    model: str | None = F(
        "realtime: sent as ?model= on the url; model and mcp: the Genkit model the prompt runs on "
        "(models.default when unset).",
        "googleai/gemini-2.5-flash",
        default=None,
    )
    session_update: dict[str, Any] | None = F(
        "Extra settings folded into the session.update event, such as instructions, tools, voice or output modalities.",
        {"instructions": "You are the support agent", "voice": "alloy"},
        default=None,
    )
    protocol: Literal["ga", "beta", "socketio"] | None = F(
        "realtime: the event dialect, ga (the default) or beta; rest with streaming websocket: socketio for "
        "a socket.io server.",
        "ga",
        default=None,
    )
    done_tool: str = F("A call of this function ends the conversation.", "end_session", default="end_session")
    turn_timeout: Duration = F("How long to wait for a turn to end.", "60s", default="60s")
    tool_results: dict[str, Any] | None = F(
        "Answers to the agent's function calls by function name (any JSON; string leaves may use {{args.NAME}}).",
        {"lookup_order": {"id": "{{args.id}}", "status": "shipped"}},
        default=None,
    )
    audio_format: Literal["pcm16", "g711_ulaw", "g711_alaw"] = F(
        "Audio mode: the agent's output audio, pcm16 or G.711 at 8 kHz.", "pcm16", default="pcm16"
    )
    sample_rate: PositiveInt = F("Audio mode: samples per second on the transport.", 16000, default=16000)
    idle: Duration = F(
        "Silence after the agent's last message or audio that ends its turn.", "2s", default="2s"
    )
    parameters: StrMap | None = F(
        "The customParameters of the start event (the Stream's Parameter elements); {{vars.x}} and "
        "{{secrets.X}} render.",
        {"campaign": "autumn", "caller_tier": "gold"},
        default=None,
    )
    command: str | None = F(
        "The stdio MCP server to start (an executable); url is the alternative for streamable HTTP.",
        "./bin/orders-mcp",
        default=None,
    )
    args: list[str] | None = F(
        "Arguments passed to command.", ["--data", "fixtures/orders.json"], default=None
    )
    env: StrMap | None = F(
        "Environment variables for command; templates render in them.",
        {"LOG_LEVEL": "warn", "API_KEY": "{{secrets.MCP_KEY}}"},
        default=None,
    )
    allow_tools: list[str] | None = F(
        "Restrict the model to this subset of the server's tools.",
        ["lookup_order", "cancel_order"],
        default=None,
    )
    call_timeout: Duration = F("The longest one tool call may take.", "20s", default="60s")
    audio: VoiceAudio | None = F(
        "How audio travels: encoding, sample rate, binary or JSON frames.",
        {"encoding": "pcm16", "sample_rate": 16000, "frames": "binary"},
        default=None,
    )
    messages: VoiceMessages | None = F(
        "The protocol's JSON control messages (open, transcript, done, interrupted, tool_calls, dtmf, close).",
        {
            "transcript": "$[?(@.type=='transcript' && @.role=='assistant')].transcript",
            "done": "$[?(@.type=='status-update' && @.status=='ended')].status",
            "close": {"type": "hangup"},
        },
        default=None,
    )
    stream: bool = F(
        "Read turns from message/stream (server-sent events) rather than message/send, when the card allows.",
        True,
        default=False,
    )
    skill: str | None = F(
        "A skill id or name the agent card must list, or the session does not start.",
        "order-status",
        default=None,
    )
    metadata: dict[str, Any] | None = F(
        "Metadata sent with every message (a tenant, a locale).", {"tenant": "acme"}, default=None
    )
    transport: Literal["jsonrpc", "http", "grpc"] | None = F(
        "The protocol binding: JSON-RPC, HTTP+JSON or gRPC; the card's preferred one (else jsonrpc) when unset.",
        "grpc",
        default=None,
    )
    push: Push | None = F(
        "Receive task updates as push notifications on a local listener instead of polling.",
        True,
        default=None,
    )
    system: str | None = F(
        "The prompt being tested, given to the model as its system message; {{vars.x}} and {{secrets.X}} render.",
        "You are the Mochi Shoes support agent.",
        default=None,
    )
    system_file: str | None = F(
        "A file next to the suite that holds the system prompt.", "prompts/support.md", default=None
    )
    tools: list[ToolDef] | None = F(
        "Tools offered to the model, each with the answer tamesu gives.",
        [{"name": "lookup_policy", "description": "The policy for a topic", "result": {"window_days": 30}}],
        default=None,
    )
    temperature: float | None = F(
        "Randomness of sampling; left to the provider when unset.", 0.2, default=None, ge=0
    )
    max_tokens: PositiveInt | None = F("Most output tokens per model call.", 800, default=None)
    max_tool_rounds: PositiveInt = F("Most call-and-answer rounds within one turn.", 4, default=5)
    fallback: list[str] | None = F(
        "Models tried in order when model fails; the run records which one answered.",
        ["googleai/gemini-2.5-pro", "openai/gpt-4.1-mini"],
        default=None,
    )

    @field_validator("*", mode="after")
    @classmethod
    def _applies(cls, value: Any, info: ValidationInfo) -> Any:
        kind = info.data.get("type")
        name = info.field_name or ""
        key = cls.model_fields[name].alias or name
        if kind is not None and kind not in _APPLIES[key]:
            types = sorted(_APPLIES[key])
            raise PydanticCustomError(
                "target_key",
                "`{key}` applies to {which} {types}, not {type}",
                {
                    "key": key,
                    "which": "type" if len(types) == 1 else "types",
                    "types": ", ".join(types),
                    "type": kind,
                },
            )
        return value

    @model_validator(mode="after")
    def _per_type(self) -> "Target":
        keys = self.set_keys()
        missing = [k for k in TARGET_REQUIRED.get(self.type, ()) if k not in keys]
        if missing:
            raise PydanticCustomError(
                "target_required",
                "a {type} target needs {keys}",
                {"type": self.type, "keys": ", ".join(missing)},
            )
        _check_alternatives(self, keys)
        return self


def _check_alternatives(t: Target, keys: set[str]) -> None:
    """Rules between keys of one target that the reference states."""

    def fail(message: str) -> None:
        raise PydanticCustomError("target_rule", message)

    if t.type == "model" and ("system" in keys) == ("system_file" in keys):
        fail("a model target takes exactly one of system, system_file")
    if t.type == "mcp":
        if ("command" in keys) == ("url" in keys):
            fail("an mcp target takes exactly one of command, url")
        if keys & {"args", "env"} and "command" not in keys:
            fail("args and env apply to an mcp target with command")
        if "headers" in keys and "url" not in keys:
            fail("headers apply to an mcp target with url")
        if {"system", "system_file"} <= keys:
            fail("an mcp target takes at most one of system, system_file")
    if t.type == "sip":
        if t.direction == "outbound" and "to" not in keys:
            fail("an outbound sip target needs to (the agent's number)")
        if t.direction == "inbound" and "trigger" not in keys:
            fail("an inbound sip target needs trigger")
        if t.direction == "outbound" and "trigger" in keys:
            fail("trigger applies to direction: inbound")
    if t.type == "livekit":
        if "token" in keys and keys & {"api_key", "api_secret"}:
            fail("a livekit target takes token or api_key and api_secret, not both")
        if ("api_key" in keys) != ("api_secret" in keys):
            fail("api_key and api_secret go together")
    if t.type == "rest":
        if t.protocol is not None and (t.protocol != "socketio" or t.streaming != "websocket"):
            fail("on a rest target, protocol takes only socketio, with streaming: websocket")
        if t.streaming != "websocket":
            ws_only = [
                k
                for k, v in (
                    ("request.open", t.request and t.request.open),
                    ("request.handshake", t.request and t.request.handshake),
                    ("response.turn_done", t.response and t.response.turn_done),
                    ("response.idle", t.response and t.response.idle),
                )
                if v is not None
            ]
            if ws_only:
                fail(f"{', '.join(ws_only)} apply with streaming: websocket")
        if t.request and t.request.capture is not None and not (t.response and t.response.poll):
            fail("request.capture applies with response.poll")
    if t.type == "realtime" and t.protocol == "socketio":
        fail("a realtime target's protocol is ga or beta")


_WEBSOCKET: dict[str, Any] = {"required": ["streaming"], "properties": {"streaming": {"const": "websocket"}}}
_EITHER_KEY: dict[str, Any] = {"anyOf": [{"required": ["api_key"]}, {"required": ["api_secret"]}]}

_TYPE_SCHEMA_RULES: dict[str, list[dict[str, Any]]] = {
    "model": [one_of_schema(("system", "system_file"))],
    "mcp": [
        one_of_schema(("command", "url")),
        {"if": {"anyOf": [{"required": ["args"]}, {"required": ["env"]}]}, "then": {"required": ["command"]}},
        {"if": {"required": ["headers"]}, "then": {"required": ["url"]}},
        {"not": {"required": ["system", "system_file"]}},
    ],
    "sip": [
        {
            "if": {"properties": {"direction": {"const": "inbound"}}, "required": ["direction"]},
            "then": {"required": ["trigger"]},
            "else": {"required": ["to"], "not": {"required": ["trigger"]}},
        }
    ],
    "livekit": [
        {"not": {"required": ["token"], **_EITHER_KEY}},
        {"anyOf": [{"required": ["api_key", "api_secret"]}, {"not": _EITHER_KEY}]},
    ],
    "rest": [
        {
            "if": set_schema("protocol"),
            "then": {
                **_WEBSOCKET,
                "properties": {"protocol": {"const": "socketio"}, **_WEBSOCKET["properties"]},
            },
        },
        {
            "if": {"not": _WEBSOCKET},
            "then": {
                "properties": {
                    "request": {"properties": {"open": {"type": "null"}, "handshake": {"type": "null"}}},
                    "response": {"properties": {"turn_done": {"type": "null"}, "idle": {"type": "null"}}},
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
    ],
    "realtime": [{"properties": {"protocol": {"not": {"const": "socketio"}}}}],
}
"""Per target type, the rules between its keys (_check_alternatives) as JSON Schema."""


def _target_schema(schema: dict[str, Any]) -> None:
    """Editors learn TARGET_KEYS: per type, keys that do not apply are forbidden and required ones required."""
    rules = []
    for kind in TARGET_TYPES:
        then: dict[str, Any] = {
            "properties": {k: False for k in sorted(set(TARGET_KEY_TYPES) - TARGET_KEYS[kind])}
        }
        if TARGET_REQUIRED.get(kind):
            then["required"] = list(TARGET_REQUIRED[kind])
        if kind in _TYPE_SCHEMA_RULES:
            then["allOf"] = _TYPE_SCHEMA_RULES[kind]
        rules.append({"if": {"properties": {"type": {"const": kind}}, "required": ["type"]}, "then": then})
    schema["allOf"] = rules
