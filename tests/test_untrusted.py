from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import msgspec
import pytest

from tamesu.actors.target_actor import storable_message
from tamesu.kernel.messages import RawResponse, ToolCall
from tamesu.kernel.transcript import Transcript, Turn
from tamesu.untrusted import json_bytes, loads_json, paint, printable, storable, table, xml_text

pytestmark = pytest.mark.unit


def test_a_lone_surrogate_from_json_is_kept_as_its_escape() -> None:
    value = loads_json('{"a\\ud800": ["x\\udfff", "pair \\ud83d\\ude00", 1]}')
    assert value == {"a\\ud800": ["x\\udfff", "pair \U0001f600", 1]}
    json_bytes(value).decode("utf-8")
    assert loads_json(b'{"t": "\\udc80"}') == {"t": "\\udc80"}
    assert loads_json('{"plain": "text"}') == {"plain": "text"}


def test_json_bytes_writes_a_surrogate_it_meets_as_its_escape() -> None:
    transcript = Transcript(turns=[Turn(role="agent", text="bad \ud800 nul \x00")])
    data = json_bytes(transcript)
    assert json.loads(data)["turns"][0]["text"] == "bad \\ud800 nul \x00"
    assert storable({"k\udfff": ("v\ud801",)}) == {"k\\udfff": ["v\\ud801"]}


def test_messages_an_adapter_passes_on_are_made_storable() -> None:
    call = ToolCall(name="look\ud800", args={"q": ["\udfff", object()]})
    made = storable_message(call)
    assert made.name == "look\\ud800" and made.args["q"][0] == "\\udfff"
    msgspec.msgpack.encode(made)
    plain = RawResponse(body={"a": "fine"})
    assert storable_message(plain) is plain, "a message that encodes is passed on as it is"


@pytest.mark.parametrize(
    ("agent", "shown"),
    [
        ("clear\x1b[2J\x1b[H", "clear\\x1b[2J\\x1b[H"),
        ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),
        (
            "\x1b]8;;https://evil/\x1b\\link\x1b]8;;\x1b\\",
            "\\x1b]8;;https://evil/\\x1b\\link\\x1b]8;;\\x1b\\",
        ),
        ("\x1b[8mhidden\x1b[0m", "\\x1b[8mhidden\\x1b[0m"),
        ("c1 csi \x9b31m osc \x9d", "c1 csi \\x9b31m osc \\x9d"),
        ("nul \x00 bs \x08 del \x7f", "nul \\x00 bs \\x08 del \\x7f"),
        ("line\r\nnext\rover", "line\nnext\\x0dover"),
        ("rtl \u202egnp.exe \u2066x\u2069", "rtl \\u202egnp.exe \\u2066x\\u2069"),
        ("lone \ud800", "lone \\ud800"),
        ("tab\tand newline\nand ünïcode ✓", "tab\tand newline\nand ünïcode ✓"),
    ],
)
def test_printable_shows_control_characters_as_escapes(agent: str, shown: str) -> None:
    assert printable(agent) == shown
    shown.encode("utf-8")


def test_xml_text_keeps_what_xml_can_hold() -> None:
    text = xml_text("a\x00b\x1bc\ud800d\tok\n\ufffe")
    assert text == "a\\x00b\\x1bc\\ud800d\tok\n\\ufffe"
    element = ET.Element("e", message=text)
    ET.fromstring(ET.tostring(element, encoding="unicode"))


def test_paint_and_table_never_carry_control_sequences_of_their_text() -> None:
    assert paint("a\x1b]0;t\x07", "red", True) == "\x1b[31ma\\x1b]0;t\\x07\x1b[0m"
    assert table([["x\x1b[2J", "y"]], header=["A", "B"]) == "A         B\nx\\x1b[2J  y"


def test_json_text_is_indented_json_that_reads_back_and_keeps_a_lone_surrogate_visible() -> None:
    import json
    from datetime import date
    from pathlib import Path

    from tamesu.untrusted import json_text

    value = {"tests": [{"id": "refund [é]", "said": "hi \ud800"}], "at": date(2026, 1, 2), "dir": Path("/r")}
    text = json_text(value)
    assert text.endswith("}\n") and '\n  "tests": [\n' in text
    assert json.loads(text) == {
        "tests": [{"id": "refund [é]", "said": "hi \\ud800"}],
        "at": "2026-01-02",
        "dir": "/r",
    }
