"""The browser target against a real web application from PyPI: Datasette serving a table of shoes
on loopback, driven by deterministic steps in a suite and by ``goal`` and ``expect`` steps under the
scripted model server."""

from __future__ import annotations

import socket
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip("datasette", reason="pip install datasette (a dev dependency)")

from tamesu.targets.browser import browser_steps
from tamesu.targets.browser.browser_session import close_shared_browsers

from .conftest import Harness
from .test_browser import Page, events_of, scripted_router, steps_of

pytestmark = pytest.mark.integration

SHOES = [("Runner", "blue", 12), ("Trail", "green", 0), ("Court", "white", 5)]


def _database(path: Path) -> Path:
    """A table with full-text search, so Datasette's table page has a search box."""
    db = path / "shop.db"
    with sqlite3.connect(db) as con:
        con.execute("create table shoes (id integer primary key, name text, colour text, stock integer)")
        con.executemany("insert into shoes (name, colour, stock) values (?, ?, ?)", SHOES)
        con.execute(
            'create virtual table shoes_fts using fts5(name, colour, content="shoes", content_rowid=id)'
        )
        con.execute("insert into shoes_fts(shoes_fts) values ('rebuild')")
    return db


@pytest.fixture
async def datasette(tmp_path: Path) -> AsyncIterator[str]:
    """Datasette's own ASGI app under uvicorn on a socket bound here; yields the table's URL."""
    import uvicorn
    from datasette.app import Datasette

    app = Datasette([str(_database(tmp_path))]).app()
    sock = socket.create_server(("127.0.0.1", 0))
    config = uvicorn.Config(app, lifespan="on", log_level="warning")
    config.load()
    server = uvicorn.Server(config)
    server.lifespan = config.lifespan_class(config)
    await server.startup(sockets=[sock])
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/shop/shoes"
    await close_shared_browsers()
    await server.shutdown()


SUITE = """
suite: datasette
targets:
  data:
    type: browser
    url: "{url}"
    browser: {{ recording: off }}
tests:
  - name: searching finds the green shoes
    target: data
    steps:
      - action: {{ assert_text: {{ ref: h3, text: "3 rows" }} }}
      - action: {{ fill: {{ ref: "input[type=search]", text: green }} }}
      - action: {{ press: {{ ref: "input[type=search]", key: Enter }} }}
      - action: {{ assert_url: "_search=green" }}
      - action: {{ assert_text: {{ ref: h3, text: "1 row" }} }}
      - action: {{ assert_text: {{ ref: table, text: Trail }} }}
  - name: the search does not find what is not there
    target: data
    steps:
      - action: {{ navigate: "?_search=boots" }}
      - action: {{ assert_text: {{ ref: table, text: Runner }} }}
"""


async def test_a_suite_drives_datasette_with_steps_and_grades_them(
    datasette: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tamesu import run_async

    monkeypatch.setattr(browser_steps, "ASSERT_WAIT", 0.5)
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.format(url=datasette))
    result = await run_async(suite, output=tmp_path / "out")
    by_name = {r.test_name: r for r in result.results}
    found = by_name["searching finds the green shoes"]
    assert found.outcome == "passed", (found.error, [a.message for a in found.assertions])
    missing = by_name["the search does not find what is not there"]
    assert missing.outcome == "failed", missing.error
    assert [a.name for a in missing.assertions if not a.passed] == ["steps[1].assert_text"]


async def test_goal_and_expect_steps_use_datasette_as_a_person_would(
    harness: Harness, datasette: str, tmp_path: Path
) -> None:
    from tamesu.kernel.events import BrowserAction
    from tamesu.testing.model_server import Reply, serve_model_server

    steps = [
        {"goal": "Show only the shoes in {{vars.colour}}"},
        {"expect": "The table lists only the Trail shoes"},
    ]
    async with serve_model_server() as server:
        server.queue(
            Reply(json={"action": "fill", "role": "searchbox", "name": "Search:", "text": "green", "reason": "search"}),
            Reply(json={"action": "press", "role": "searchbox", "name": "Search:", "key": "Enter", "reason": "run it"}),
            Reply(json={"action": "done", "reason": "One row: Trail, green"}),
            Reply(json={"reason": "Only Trail is listed", "passed": True}),
        )  # fmt: skip
        page = Page(harness, {"url": datasette, "browser": {"recording": "off"}}, steps, tmp_path)
        page.adapter.ctx.models = scripted_router(server)
        page.adapter.ctx.scope.set("vars.colour", "green")
        out = await page.open()
    actions = events_of(out, BrowserAction)
    assert [(a.action, a.ok) for a in actions] == [("fill", True), ("press", True)]
    first = server.requests[0]["messages"][-1]["content"]
    assert "Goal: Show only the shoes in green" in first and 'searchbox "Search:"' in first
    judged = server.requests[3]["messages"][-1]["content"]
    assert "Trail" in judged and "Runner" not in judged
    events = steps_of(out)
    assert [(e["action"], e["passed"]) for e in events] == [("goal", True), ("expect", True)]
    assert Path(events[1]["screenshot"]).read_bytes()[:4] == b"\x89PNG"
    assert [(r.kind, r.passed) for r in page.adapter.results()] == [("goal", True), ("expect", True)]


def test_an_engine_other_than_chromium_is_refused_at_its_line(tmp_path: Path) -> None:
    from tamesu.config.loader import load_suite
    from tamesu.errors import ConfigErrors

    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.format(url="http://127.0.0.1:1/").replace("recording: off", "engine: firefox"))
    with pytest.raises(ConfigErrors) as err:
        load_suite(suite)
    [error] = err.value.errors
    assert "expected one of chromium, got 'firefox'" in str(error)
    assert error.path == "targets.data.browser.engine" and error.line == 7
