"""Pure parts of the rest target: event-stream parsing, socket.io framing, listener paths, readers."""

from __future__ import annotations

import pytest

from tamesu.config.target_base import ConnectConfig, HandoffSignal
from tamesu.kernel.messages import Handoff, ToolCall
from tamesu.targets.handoff import detect_handoff
from tamesu.targets.rest.rest_listen import PathFilter
from tamesu.targets.rest.rest_read import Reader, parse_tool_calls
from tamesu.targets.rest.rest_stream import SSEParser
from tamesu.targets.rest.rest_ws import sio_decode, sio_encode, ws_url
from tamesu.wire.connect import ConnectPolicy

pytestmark = pytest.mark.unit


def test_sse_parser_multiline_data_and_ids() -> None:
    p = SSEParser()
    lines = ["id: 7", "event: delta", "data: a", "data: b", "", "data:c"]
    events = [e for e in (p.feed(line) for line in lines) if e is not None]
    assert [(e.event, e.data, e.id) for e in events] == [("delta", "a\nb", "7")]
    last = p.flush()
    assert last is not None and last.data == "c" and last.event == "message"


def test_socketio_codec_and_url() -> None:
    assert (
        sio_encode({"event": "user_message", "data": {"text": "hi"}}) == '42["user_message", {"text": "hi"}]'
    )
    assert sio_encode({"event": "ping_me"}) == '42["ping_me"]'
    assert sio_decode('["bot", {"a": 1}]') == {"event": "bot", "data": {"a": 1}}
    assert sio_decode('/chat,12["bot", 1, 2]') == {"event": "bot", "data": [1, 2]}
    assert ws_url("http://h:1", socketio=True) == "ws://h:1/socket.io/?EIO=4&transport=websocket"
    assert ws_url("https://h/api/socket.io/?token=x", socketio=True) == (
        "wss://h/api/socket.io/?token=x&EIO=4&transport=websocket"
    )


def test_path_filter() -> None:
    f = PathFilter("POST /bot*/sendMessage")
    assert f.matches("POST", "/bot123/sendMessage")
    assert not f.matches("GET", "/bot123/sendMessage")
    assert not f.matches("POST", "/bot123/sendPhoto")
    prefix = PathFilter("/hooks/")
    assert prefix.matches("PUT", "/hooks/a/b") and not prefix.matches("PUT", "/other")
    assert PathFilter(None).matches("DELETE", "/anything")
    assert PathFilter("POST").matches("POST", "/x") and not PathFilter("POST").matches("GET", "/x")


def test_tool_call_shapes() -> None:
    calls = parse_tool_calls(
        [
            ["a", {"name": "b", "arguments": '{"x": 1}'}],
            {"function": {"name": "c", "arguments": "not json"}, "id": 3},
            {"no_name": True},
            "",
        ]
    )
    assert [(c.name, c.args, c.id) for c in calls] == [
        ("a", {}, None),
        ("b", {"x": 1}, None),
        ("c", {"input": "not json"}, "3"),
    ]


def test_reader_falls_back_to_common_reply_keys() -> None:
    reader = Reader(None)
    assert reader.read({"message": "hi"}).texts == ["hi"]
    assert reader.read("plain").texts == ["plain"]
    assert reader.read({"other": 1}).texts == []


def test_handoff_signals() -> None:
    tool = HandoffSignal(tool="transfer", to="dept")
    call = ToolCall(name="transfer", args={"dept": "billing"})
    assert detect_handoff(tool, text="", tool_calls=[call]) == Handoff(to="billing")
    assert detect_handoff(tool, text="transfer", tool_calls=[]) is None
    by_path = HandoffSignal(json_path="$.handoff", to="$.handoff.queue")
    assert detect_handoff(by_path, text="", raw=[{"handoff": False}]) is None
    assert detect_handoff(by_path, text="", raw=[{"handoff": {"queue": "vip"}}]) == Handoff(to="vip")
    by_text = HandoffSignal(regex=r"(?i)connecting you to (\w+)")
    assert detect_handoff(by_text, text="Connecting you to Sales now") == Handoff(to="Sales")
    assert detect_handoff(None, text="Connecting you to Sales now") is None


def test_connect_backoff_doubles_with_jitter_and_a_cap() -> None:
    policy = ConnectPolicy(attempts=5, backoff=1.0, max_backoff=3.0)
    for attempt, base in [(1, 1.0), (2, 2.0), (3, 3.0), (4, 3.0)]:
        delays = {policy.delay(attempt) for _ in range(20)}
        assert all(base * 0.8 <= d <= min(3.0, base * 1.2) for d in delays)
    assert ConnectPolicy.from_config(
        ConnectConfig(attempts=2, backoff="1s", max_backoff="10s")
    ) == ConnectPolicy(attempts=2, backoff=1.0, max_backoff=10.0)


def test_testing_exports_resolve() -> None:
    import tamesu.testing

    assert all(getattr(tamesu.testing, name) for name in tamesu.testing.__all__)
    with pytest.raises(AttributeError):
        _ = tamesu.testing.Nope  # type: ignore[attr-defined]
