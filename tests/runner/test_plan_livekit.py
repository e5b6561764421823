"""A livekit target without a server of its own takes tamesu.yaml's ``livekit:`` block (the
plan carries the block to the kinds that read it, and the wing applies it)."""

from __future__ import annotations

import pytest

from tamesu.config.project import Project
from tamesu.config.target import parse_target
from tamesu.targets.livekit.settings import with_project_server

pytestmark = pytest.mark.unit

PROJECT = Project.model_validate(
    {"livekit": {"url": "wss://lk.example", "api_key": "{{secrets.K}}", "api_secret": "{{secrets.S}}"}}
)


def test_a_livekit_target_without_a_server_gets_the_projects() -> None:
    target = with_project_server(parse_target({"type": "livekit"}), PROJECT.livekit)
    assert (target.url, target.api_key, target.api_secret) == (
        "wss://lk.example",
        "{{secrets.K}}",
        "{{secrets.S}}",
    )


def test_a_targets_own_server_and_token_win() -> None:
    own = parse_target({"type": "livekit", "url": "ws://mine", "token": "{{session.t}}"})
    target = with_project_server(own, PROJECT.livekit)
    assert (target.url, target.token, target.api_key) == ("ws://mine", "{{session.t}}", None)


def test_without_a_project_block_the_target_is_left_alone() -> None:
    own = parse_target({"type": "livekit", "url": "ws://mine"})
    assert with_project_server(own, None) is own


def test_the_plan_carries_the_block_to_livekit_runs_only(tmp_path) -> None:
    from tamesu.config.loader import load_suite
    from tamesu.runner.plan import plan

    (tmp_path / "tamesu.yaml").write_text("livekit: { url: wss://lk.example, api_key: k, api_secret: s }\n")
    (tmp_path / "s.yaml").write_text(
        "suite: s\ntargets:\n  room: { type: livekit }\n  api: { type: rest, url: http://x }\n"
        "tests:\n  - { name: a, target: room, scenario: { script: [{ say: hi }] } }\n  - { name: b, target: api, scenario: { script: [{ say: hi }] } }\n"
    )
    specs = {s.test_name: s for s in plan(load_suite(tmp_path / "s.yaml"))}
    assert specs["a"].livekit is not None and specs["a"].livekit.url == "wss://lk.example"
    assert specs["b"].livekit is None
