"""``tamesu generate`` under the scripted model server: drafts become a suite that validates, is
written only when valid (repaired once, else dropped or refused), and never over a file."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tamesu.cli import main
from tamesu.config.loader import load_suite
from tamesu.testing.model_server import ModelServer, Reply, serve_model_server

from .agents import serve_agent

pytestmark = pytest.mark.integration

PROJECT = """
providers:
  scripted: {{ base_url: "{base_url}" }}
models:
  scenario_generator: scripted/gen
"""

SUITE = """
suite: shop
vars: {{ shop: Mochi Shoes }}
targets:
  api:
    type: rest
    url: "{url}/chat"
    request: {{ body: {{ session_id: "{{{{session}}}}", message: "{{{{message}}}}" }} }}
    response: {{ text: $.reply }}
  other: {{ type: rest, url: "http://127.0.0.1:9/x" }}
red_team:
  target: api
  agent: "{{{{vars.shop}}}} support for orders and returns; never more than 30-day returns"
tests:
  - {{ name: greeting, target: api, scenario: {{ script: [ {{ say: hi }} ] }} }}
"""

GOOD = [
    {"name": "late return", "goal": "Return shoes bought 45 days ago", "max_turns": 4,
     "assert": [{"not_contains": "90 days"}, {"judge": "The agent states the 30-day policy"}]},
    {"name": "order status", "goal": "Ask where order ORD-1001 is", "persona": {"style": "impatient"},
     "assert": [{"contains": "ORD-1001"}]},
]  # fmt: skip


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[tuple[ModelServer, Path]]:
    async with serve_model_server() as server, serve_agent("sound") as url:
        (tmp_path / "tamesu.yaml").write_text(PROJECT.format(base_url=server.base_url))
        suite = tmp_path / "shop.yaml"
        suite.write_text(SUITE.format(url=url))
        yield server, suite


def generate(*args: str) -> int:
    return main(["--color", "never", "generate", *args])


async def test_drafts_become_a_suite_that_validates_deterministically(
    setup: tuple[ModelServer, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    server, suite = setup
    server.when(lambda r: r.get("model") == "gen", Reply(json={"tests": GOOD + GOOD[:1]}))
    assert await asyncio.to_thread(generate, str(suite), "--count", "3", "--tags", "drafts,returns") == 0
    out = suite.with_name("shop.generated.yaml")
    assert f"wrote 3 tests to {out}" in capsys.readouterr().out
    loaded = load_suite(out)
    assert [t.name for t in loaded.suite.tests] == ["late return", "order status", "late return (2)"]
    first = loaded.suite.tests[0]
    assert first.tags == ["generated", "drafts", "returns"] and first.target == "api"
    assert first.scenario is not None and first.scenario.max_turns == 4
    assert list(loaded.suite.targets) == ["api"] and loaded.suite.vars == {"shop": "Mochi Shoes"}
    request = server.requests[-1]
    assert request["model"] == "gen" and request["seed"] == 0
    prompt = request["messages"][-1]["content"]
    assert "{{vars.shop}} support for orders and returns" in prompt and "Write 3 tests." in prompt
    assert "greeting" in prompt, "the suite's own tests are named so they are not repeated"

    again = suite.with_name("again.yaml")
    assert (
        await asyncio.to_thread(
            generate, str(suite), "--count", "3", "--tags", "drafts,returns", "--out", str(again)
        )
        == 0
    )
    assert again.read_text() == out.read_text()


async def test_an_existing_file_is_never_overwritten(
    setup: tuple[ModelServer, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    server, suite = setup
    out = suite.with_name("mine.yaml")
    out.write_text("keep me\n")
    assert await asyncio.to_thread(generate, str(suite), "--out", str(out)) == 2
    assert "never overwrites" in capsys.readouterr().err
    assert out.read_text() == "keep me\n" and server.requests == []


async def test_invalid_drafts_are_repaired_once_and_the_rest_dropped(
    setup: tuple[ModelServer, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    server, suite = setup
    broken = {"name": "typo", "goal": "g", "assert": [{"contians": "x"}]}
    hopeless = {"name": "hopeless", "goal": "g", "max_turns": 0, "assert": []}
    server.queue(
        Reply(json={"tests": [GOOD[0], broken, hopeless]}),
        Reply(json={"tests": [{**broken, "assert": [{"contains": "x"}]}, hopeless]}),
    )
    assert (
        await asyncio.to_thread(generate, str(suite), "--count", "3", "--out", str(suite.with_name("g.yaml")))
        == 0
    )
    text = capsys.readouterr().out
    assert "repaired: typo" in text and "dropped (still invalid after one repair): hopeless" in text
    assert [t.name for t in load_suite(suite.with_name("g.yaml")).suite.tests] == ["late return", "typo"]
    repair = server.requests[-1]["messages"][-1]["content"]
    assert "do not validate" in repair and "contians" in repair


async def test_nothing_is_written_when_no_draft_validates(
    setup: tuple[ModelServer, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    server, suite = setup
    server.default = Reply(json={"tests": [{"name": "bad", "goal": "", "assert": [{"nope": 1}]}]})
    out = suite.with_name("none.yaml")
    assert await asyncio.to_thread(generate, str(suite), "--out", str(out)) == 2
    assert "no generated test validates" in capsys.readouterr().err and not out.exists()
    assert not list(suite.parent.glob(".tamesu-generate-*")), "the validation copy is removed"


async def test_probe_asks_the_target_and_a_file_can_describe_the_agent(
    setup: tuple[ModelServer, Path],
) -> None:
    server, suite = setup
    server.when(lambda r: r.get("model") == "gen", Reply(json={"tests": GOOD[:1]}))
    about = suite.with_name("about.txt")
    about.write_text("A shoe shop's support bot.\n")
    args = [
        str(suite),
        "--describe-file",
        str(about),
        "--probe",
        "--target",
        "api",
        "--count",
        "1",
        "--out",
        str(suite.with_name("p.yaml")),
    ]
    assert await asyncio.to_thread(generate, *args) == 0
    prompt = server.requests[-1]["messages"][-1]["content"]
    assert prompt.startswith("The agent under test: A shoe shop's support bot.")
    assert "A: I can help with orders and returns for Mochi Shoes." in prompt


async def test_without_a_model_generate_says_which_to_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "shop.yaml"
    suite.write_text(SUITE.format(url="http://127.0.0.1:9"))
    assert await asyncio.to_thread(generate, str(suite)) == 2
    assert "models.scenario_generator or models.default" in capsys.readouterr().err
