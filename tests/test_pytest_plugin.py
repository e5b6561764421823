"""The pytest plugin, run by pytest's own ``pytester`` against a real loopback agent."""

from __future__ import annotations

import asyncio
import queue
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from .reports.builders import NEEDS_GPU
from .reports.runs import shop_agent

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.integration

SUITE = """
suite: shop
targets:
  api: {{ type: rest, url: "{url}/chat", response: {{ text: $.reply, tool_calls: "$.tool_calls[*]" }} }}
tests:
  - name: greets
    tags: [smoke, first-contact]
    target: api
    scenario: {{ script: [ {{ say: hello }} ] }}
    assert: [ {{ contains: Hello }} ]
  - name: refund policy
    target: api
    repeat: 4
    pass_threshold: 0.5
    scenario: {{ script: [ {{ say: refund }} ] }}
    assert: [ {{ contains: "30 days" }} ]
  - name: hostile reply
    target: api
    scenario: {{ script: [ {{ say: hostile }} ] }}
    assert: [ {{ contains: thanks }} ]
"""


@pytest.fixture
def suites(pytester: pytest.Pytester) -> Iterator[pytest.Pytester]:
    with shop_agent() as url:
        pytester.makefile(".yaml", tamesu="output: runs\nhistory: { enabled: false }\n")
        (pytester.path / "suites").mkdir()
        (pytester.path / "suites" / "shop.yaml").write_text(SUITE.format(url=url))
        (pytester.path / "suites" / "notes.yaml").write_text("just: some yaml\n")
        yield pytester


def test_suites_are_collected_one_item_per_test_and_repeats_as_parameters(suites: pytest.Pytester) -> None:
    result = suites.runpytest_subprocess("--tamesu", "suites/", "--collect-only", "-q", "-p", "no:randomly")
    items = [line for line in result.outlines if "::" in line]
    assert items == [
        "suites/shop.yaml::greets",
        *(f"suites/shop.yaml::refund policy[{i}]" for i in range(1, 5)),
        "suites/shop.yaml::hostile reply",
    ]


def test_verdicts_are_pytest_outcomes(suites: pytest.Pytester) -> None:
    result = suites.runpytest_subprocess("--tamesu", "suites/", "-p", "no:randomly", "-p", "no:cacheprovider")
    # refunds alternate 30 / 60 days: two repeats pass, two fail, and 2/4 meets the threshold of 0.5
    result.assert_outcomes(passed=3, failed=1, xfailed=2)
    text = result.stdout.str()
    assert "contains: expected 'thanks'" in text and "\x1b" not in text
    assert re.search(r"transcript: tamesu show --run-dir \S+ \S+", text)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_k_and_markers_select_items(suites: pytest.Pytester) -> None:
    result = suites.runpytest_subprocess(
        "--tamesu", "suites/", "-m", "first_contact", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1, deselected=5)
    result = suites.runpytest_subprocess(
        "--tamesu", "suites/", "-k", "refund and 1", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1, deselected=5)


def test_without_the_option_suites_are_not_collected(suites: pytest.Pytester) -> None:
    result = suites.runpytest_subprocess("suites/")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_an_invalid_suite_is_a_collection_error_naming_the_line(suites: pytest.Pytester) -> None:
    (suites.path / "suites" / "broken.yaml").write_text(
        "suite: broken\ntargets: {}\ntests:\n  - name: x\n    tagets: api\n"
    )
    result = suites.runpytest_subprocess("--tamesu", "suites/broken.yaml")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*broken.yaml:5:5*tagets*"])


def test_the_plugin_runs_under_strict_markers_with_warnings_as_errors(suites: pytest.Pytester) -> None:
    # pytest-asyncio (installed beside tamesu here) warns when this is unset; a project sets it
    suites.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    strict = ("--strict-markers", "-W", "error", "-p", "no:cacheprovider")
    result = suites.runpytest_subprocess("--tamesu", "suites/", *strict, "-m", "tamesu and smoke")
    result.assert_outcomes(passed=1, deselected=5)
    assert "PytestUnknownMarkWarning" not in result.stdout.str() + result.stderr.str()


def test_the_tamesu_marker_is_registered_without_the_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.tamesu: *"])


JUDGED = """
suite: judged
targets:
  api: {{ type: rest, url: "{url}/chat", response: {{ text: $.reply }} }}
tests:
  - name: unsure
    target: api
    scenario: {{ script: [ {{ say: hello }} ] }}
    assert: [ {{ judge: "The agent promises a refund" }} ]
"""


@contextmanager
def cannot_tell_judge() -> Iterator[str]:
    """The scripted model server in a thread of its own, answering every judge "cannot tell"."""
    from tamesu.testing.model_server import ModelServer, Reply, serve_model_server

    loop = asyncio.new_event_loop()
    ready: queue.Queue[str] = queue.Queue()
    stop = asyncio.Event()

    async def serve() -> None:
        server = ModelServer(
            default=Reply(json={"reason": "no refund talk", "cannot_tell": True, "passed": False})
        )
        async with serve_model_server(server) as s:
            ready.put(s.base_url)
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    try:
        yield ready.get(timeout=30)
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)


def test_an_inconclusive_run_is_a_skipped_item_saying_why(pytester: pytest.Pytester) -> None:
    with shop_agent() as url, cannot_tell_judge() as base_url:
        project = f'output: runs\nhistory: {{ enabled: false }}\nproviders: {{ scripted: {{ base_url: "{base_url}" }} }}\nmodels: {{ judge: scripted/judge }}\n'
        pytester.makefile(".yaml", tamesu=project)
        (pytester.path / "suites").mkdir()
        (pytester.path / "suites" / "judged.yaml").write_text(JUDGED.format(url=url))
        result = pytester.runpytest_subprocess("--tamesu", "suites/", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    assert "inconclusive: judge: inconclusive:" in result.stdout.str()


def test_a_run_that_passed_with_a_skipped_check_passes_with_a_warning_naming_it(
    pytester: pytest.Pytester,
) -> None:
    with shop_agent() as url:
        pytester.makefile(".yaml", tamesu="output: runs\nhistory: { enabled: false }\n")
        (pytester.path / "tamesu_assertions").mkdir()
        (pytester.path / "tamesu_assertions" / "gpu.py").write_text(NEEDS_GPU)
        suite = SUITE.format(url=url).replace(
            "assert: [ { contains: Hello } ]", "assert: [ { contains: Hello }, { custom: voice_quality } ]"
        )
        (pytester.path / "suites").mkdir()
        (pytester.path / "suites" / "shop.yaml").write_text(suite)
        result = pytester.runpytest_subprocess(
            "--tamesu", "suites/", "-k", "greets", "-p", "no:cacheprovider"
        )
    result.assert_outcomes(passed=1, deselected=5)
    text = result.stdout.str()
    assert (
        "SkippedChecks: shop / greets passed with 1 check(s) not evaluated: custom: skipped: "
        "expected 'voice_quality' (needs a GPU, and this machine has none)"
    ) in text
