"""A livekit target without a server of its own takes tamesu.yaml's ``livekit:`` block."""

from __future__ import annotations

import pytest

from tamesu.config.project import Project
from tamesu.config.target import parse_target
from tamesu.runner.plan import with_project_server

pytestmark = pytest.mark.unit

PROJECT = Project.model_validate(
    {"livekit": {"url": "wss://lk.example", "api_key": "{{secrets.K}}", "api_secret": "{{secrets.S}}"}}
)


def test_a_livekit_target_without_a_server_gets_the_projects() -> None:
    target = with_project_server(parse_target({"type": "livekit"}), PROJECT)
    assert (target.url, target.api_key, target.api_secret) == (
        "wss://lk.example",
        "{{secrets.K}}",
        "{{secrets.S}}",
    )


def test_a_targets_own_server_and_token_win() -> None:
    own = parse_target({"type": "livekit", "url": "ws://mine", "token": "{{session.t}}"})
    target = with_project_server(own, PROJECT)
    assert (target.url, target.token, target.api_key) == ("ws://mine", "{{session.t}}", None)


def test_other_targets_are_left_alone() -> None:
    rest = parse_target({"type": "rest", "url": "http://x"})
    assert with_project_server(rest, PROJECT) is rest
