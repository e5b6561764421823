"""sip.inbound_number: a number or the SIP URI to listen on, never wrapped twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from tamesu.config.loader import load_project
from tamesu.config.sip_inbound import InboundAddress, inbound_address
from tamesu.errors import ConfigErrors

pytestmark = pytest.mark.unit


def test_a_number_is_the_user_part_of_the_uri_tamesu_listens_on() -> None:
    address = inbound_address("+34 910 000 001", bind="10.0.0.5", port=5070)
    assert address == InboundAddress("+34910000001", "10.0.0.5", 5070)
    assert address.uri("10.0.0.5", 5070) == "sip:+34910000001@10.0.0.5:5070"


def test_a_sip_uri_is_where_tamesu_listens_and_its_user_part_is_the_number() -> None:
    address = inbound_address("sip:+34910000001@127.0.0.1:5080")
    assert address == InboundAddress("+34910000001", "127.0.0.1", 5080)
    assert address.uri("127.0.0.1", 5080) == "sip:+34910000001@127.0.0.1:5080"


def test_a_uri_without_a_port_takes_inbound_port() -> None:
    assert inbound_address("sip:agentline@127.0.0.1", port=5090).port == 5090


@pytest.mark.parametrize(
    ("text", "bind", "port", "message"),
    [
        ("sip:127.0.0.1:5080", None, None, "with a user part"),
        ("sips:+349@127.0.0.1:5080", None, None, "with a user part"),
        ("+349@127.0.0.1", None, None, "neither a number nor a SIP URI"),
        ("sip:+349@127.0.0.1:5080", "10.0.0.5", None, "but sip.bind is 10.0.0.5"),
        ("sip:+349@127.0.0.1:5080", None, 5070, "but sip.inbound_port is 5070"),
    ],
)
def test_what_cannot_be_listened_on_is_refused_naming_the_forms(
    text: str, bind: str | None, port: int | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        inbound_address(text, bind=bind, port=port)


def test_validate_refuses_an_inbound_number_in_neither_form(tmp_path: Path) -> None:
    (tmp_path / "tamesu.yaml").write_text(
        'sip: { inbound_number: "+349@127.0.0.1:5080" }\n', encoding="utf-8"
    )
    with pytest.raises(ConfigErrors) as info:
        load_project(tmp_path)
    (err,) = info.value.errors
    assert err.file.endswith("tamesu.yaml") and err.path.startswith("sip")
    assert "write a number (+34910000001) or the SIP URI to listen on" in err.message


def test_validate_accepts_a_sip_uri(tmp_path: Path) -> None:
    (tmp_path / "tamesu.yaml").write_text(
        'sip: { inbound_number: "sip:+349@127.0.0.1:5080" }\n', encoding="utf-8"
    )
    found = load_project(tmp_path)
    assert found is not None and found[0].sip is not None
    assert found[0].sip.inbound_number == "sip:+349@127.0.0.1:5080"


def test_hooks_know_the_number_and_the_uri_once_its_port_is_fixed() -> None:
    from tamesu.config.project import Project, SipConfig
    from tamesu.runner.suite_setup import sip_values

    fixed = Project(sip=SipConfig(inbound_number="+349", inbound_port=5070, bind="10.0.0.5"))
    assert sip_values(fixed) == {"inbound_number": "+349", "inbound_uri": "sip:+349@10.0.0.5:5070"}
    assert sip_values(Project(sip=SipConfig(inbound_number="sip:+349@127.0.0.1:5080"))) == {
        "inbound_number": "+349",
        "inbound_uri": "sip:+349@127.0.0.1:5080",
    }
    assert sip_values(Project(sip=SipConfig(inbound_number="+349"))) == {"inbound_number": "+349"}
    assert sip_values(None) == {}


def test_a_hook_may_name_the_inbound_number_and_uri_and_nothing_else_of_sip(tmp_path: Path) -> None:
    from tamesu.config.loader import load_suite

    suite = """\
suite: demo
hooks:
  before_all:
    - http: { url: "http://127.0.0.1:9/setup", body: { number: "{{sip.inbound_number}}", uri: "{{sip.inbound_uri}}" } }
targets:
  api: { type: rest, url: "http://127.0.0.1:9/chat" }
tests:
  - { name: greeting, target: api }
"""
    path = tmp_path / "s.yaml"
    path.write_text(suite, encoding="utf-8")
    load_suite(path, project=False)
    path.write_text(suite.replace("sip.inbound_uri", "sip.inbound_url"), encoding="utf-8")
    with pytest.raises(ConfigErrors) as info:
        load_suite(path, project=False)
    (err,) = info.value.errors
    assert "{{sip.inbound_url}} is not available" in err.message and "inbound_uri" in err.hint
