from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tamesu.assertions import custom as custom_module
from tamesu.assertions import custom_assertions

from .builders import convo
from .conftest import Check

pytestmark = pytest.mark.unit

RUN = convo("user: Which shoes are best?", "agent: Ours beat Acme shoes any day.")

NO_COMPETITORS = """
from tamesu.assertions import AssertionResult, custom_assertion

@custom_assertion("no_competitor_names")
def no_competitor_names(spec, ctx):
    bad = [w for w in ("acme", "globex") if w in ctx.transcript.agent_text().lower()]
    return AssertionResult.of(not bad, expected="no competitor names", actual=bad)

@custom_assertion("polite")
async def polite(spec, ctx):
    return "please" in ctx.transcript.agent_text().lower(), "the agent never said please"
"""


@pytest.fixture(autouse=True)
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with no custom assertions and nothing loaded, and leaves none behind."""
    monkeypatch.delenv("TAMESU_PLUGINS", raising=False)
    saved_items = dict(custom_assertions._items)
    saved_loaded = set(custom_module._loaded)
    custom_assertions._items.clear()
    custom_module._loaded.clear()
    modules = set(sys.modules)
    yield
    custom_assertions._items.clear()
    custom_assertions._items.update(saved_items)
    custom_module._loaded.clear()
    custom_module._loaded.update(saved_loaded)
    for name in set(sys.modules) - modules:
        if name.startswith(("tamesu_plugins_", "shop_checks", "shopplug")):
            del sys.modules[name]


def _project(tmp_path: Path) -> Path:
    (tmp_path / "tamesu.yaml").write_text("name: shop\n")
    (tmp_path / "tamesu_assertions").mkdir()
    (tmp_path / "tamesu_assertions" / "checks.py").write_text(NO_COMPETITORS)
    suite_dir = tmp_path / "suites" / "support"
    suite_dir.mkdir(parents=True)
    return suite_dir


async def test_plugin_folder_beside_tamesu_yaml(check: Check, tmp_path: Path) -> None:
    suite_dir = _project(tmp_path)
    result = await check({"custom": "no_competitor_names"}, RUN, suite_dir=suite_dir)
    assert not result.passed and not result.error and result.actual == ["acme"]
    assert result.name == "custom" and result.kind == "custom"
    assert (
        await check({"custom": "no_competitor_names"}, convo("agent: Ours are great"), suite_dir=suite_dir)
    ).passed


async def test_async_custom_returning_a_tuple(check: Check, tmp_path: Path) -> None:
    suite_dir = _project(tmp_path)
    result = await check({"custom": "polite"}, RUN, suite_dir=suite_dir)
    assert not result.passed and result.message == "the agent never said please"
    assert (await check({"custom": "polite"}, convo("agent: Please hold"), suite_dir=suite_dir)).passed


async def test_unknown_name_lists_the_registered_ones(check: Check, tmp_path: Path) -> None:
    suite_dir = _project(tmp_path)
    result = await check({"custom": "no_such_check"}, RUN, suite_dir=suite_dir)
    assert result.error
    assert "unknown custom assertion 'no_such_check'" in result.message
    assert "no_competitor_names, polite" in result.message


async def test_no_plugins_says_where_they_go(check: Check, tmp_path: Path) -> None:
    result = await check({"custom": "anything"}, RUN, suite_dir=tmp_path)
    assert result.error and "tamesu_assertions/" in result.message


async def test_tamesu_plugins_file_and_module(
    check: Check, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = tmp_path / "lib" / "extra.py"
    plugin.parent.mkdir()
    plugin.write_text(NO_COMPETITORS)
    (tmp_path / "lib" / "shop_checks.py").write_text(
        "from tamesu.assertions import custom_assertion\n"
        "@custom_assertion('short')\n"
        "def short(spec, ctx):\n"
        "    return len(ctx.transcript.agent_turns()) <= 1\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    monkeypatch.setenv("TAMESU_PLUGINS", f"{plugin}, shop_checks")
    assert not (await check({"custom": "no_competitor_names"}, RUN, suite_dir=tmp_path)).passed
    assert (await check({"custom": "short"}, RUN, suite_dir=tmp_path)).passed


async def test_entry_point_group(check: Check, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    dist = site / "shopplug-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: shopplug\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[tamesu.assertions]\nmentions_acme = shopplug:mentions_acme\n")
    (site / "shopplug.py").write_text(
        "def mentions_acme(spec, ctx):\n    return 'acme' in ctx.transcript.agent_text().lower()\n"
    )
    monkeypatch.syspath_prepend(str(site))
    assert (await check({"custom": "mentions_acme"}, RUN, suite_dir=tmp_path)).passed


async def test_a_broken_plugin_is_an_error_naming_it(check: Check, tmp_path: Path) -> None:
    (tmp_path / "tamesu_assertions").mkdir()
    (tmp_path / "tamesu_assertions" / "broken.py").write_text("raise RuntimeError('oops in plugin')\n")
    result = await check({"custom": "x"}, RUN, suite_dir=tmp_path)
    assert result.error and "oops in plugin" in result.message


async def test_bad_return_value_is_an_error(check: Check, tmp_path: Path) -> None:
    custom_assertions.add("sloppy", lambda spec, ctx: "yes")
    result = await check({"custom": "sloppy"}, RUN, suite_dir=tmp_path)
    assert result.error and "must return an AssertionResult" in result.message
