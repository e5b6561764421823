"""With runs in other processes (Ray workers, or ``--processes`` workers), the driver serves the
suite's remote agents: URLs known to before_all, each worker's run fetches its own exchanges before
it is graded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("a2a.client", reason="the a2a extra is not installed")

from tamesu.testing.a2a_agent import serve_a2a_agent

from ..stored import stored_transcript
from .test_in_hooks import LONG_RUNNING, ORDER_TEST

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "placed",
    [
        pytest.param({"ray": True}, marks=[pytest.mark.ray, pytest.mark.slow], id="ray"),
        pytest.param({"processes": 2}, id="processes"),
    ],
)
async def test_the_driver_serves_the_suites_remote_agents_and_each_run_gets_its_own(
    tmp_path: Path, placed: dict[str, Any]
) -> None:
    from tamesu import run_async

    if placed.get("ray"):
        pytest.importorskip("ray")

    orders = ["A1", "B2"]
    async with serve_a2a_agent() as shop:
        suite = tmp_path / "suite.yaml"
        tests = "".join(ORDER_TEST.format(order=o) for o in orders)
        suite.write_text(LONG_RUNNING.format(shop=shop.url, admin=shop.url + "admin/delegate", tests=tests))
        result = await run_async(suite, output=tmp_path / "out", concurrency=2, **placed)
    assert [r.outcome for r in result.results] == ["passed"] * 2, [
        (r.error, [a.message for a in r.assertions]) for r in result.results
    ]
    configured, cleared = shop.admin
    assert cleared == {"url": "", "was": configured["url"]}
    assert result.run_dir is not None
    for run in result.results:
        order = run.test_id.split()[-1]
        tr = stored_transcript(result.run_dir, run)
        heard = [e for e in tr["events"] if e["type"] == "a2a_remote" and e["direction"] == "received"]
        assert [e["text"] for e in heard] == [
            f"delegate: refund order {order}",
            f"delegate: and again for {order}",
        ]
        assert all(0 <= e["at"] < 120 for e in heard), "placed on the run's own clock"
