"""What a run cost, everywhere it is reported: console, summary.json, HTML, history."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tamesu.history.store import HistoryDB
from tamesu.reports.html import render_html
from tamesu.reports.rundir import RunDirectory

from .runs import SUITE, shop_agent

pytestmark = pytest.mark.integration

PRICES = "prices: { call_minute: { rest: 600 } }\n"
"""$10 a second of call: the shop's runs are short, and a price this high makes every one show."""


def test_cost_per_test_per_run_and_per_pass_reach_every_report(tmp_path: Path) -> None:
    (tmp_path / "tamesu.yaml").write_text("output: runs\n" + PRICES)
    with shop_agent() as url:
        (tmp_path / "shop.yaml").write_text(SUITE.format(url=url))
        done = subprocess.run(
            [sys.executable, "-m", "tamesu", "run", "shop.yaml", "-j", "1"],
            cwd=tmp_path, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    out = done.stdout + done.stderr
    run_dir = tmp_path / "runs" / "latest"
    summary = json.loads((run_dir / "summary.json").read_text())
    cost = summary["cost"]
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    # every run's cost is its length at the price of a minute of its target type
    for r in results:
        assert r["metrics"]["cost_usd"] == pytest.approx(r["metrics"]["duration_s"] / 60 * 600)
    total = sum(r["metrics"]["cost_usd"] for r in results)
    passed = sum(r["outcome"] == "passed" for r in results)
    assert cost["total_usd"] == pytest.approx(total) and cost["runs"] == len(results) == 6
    assert cost["per_run_usd"] == pytest.approx(total / 6)
    assert cost["per_pass_usd"] == pytest.approx(total / passed)
    assert cost["parts"]["call_minutes_usd"] == pytest.approx(total)
    per_test = {t["test_id"]: t["cost_usd"] for t in summary["tests"]}
    assert sum(per_test.values()) == pytest.approx(total) and all(v > 0 for v in per_test.values())

    assert f"cost: ${total:.4f} in all, ${total / 6:.4f} per run, ${total / passed:.4f} per pass" in out, out
    assert "cost" in out.split("verdict", 1)[1].splitlines()[0], "the table has a cost column"

    page = render_html(RunDirectory.open(run_dir))
    assert f"cost ${total:.4f}, ${total / passed:.4f} per pass" in page
    assert "<th>cost</th>" in page

    [inv] = HistoryDB(tmp_path / ".tamesu" / "history.db").invocations(limit=1)
    assert inv.cost_usd == pytest.approx(total)
    assert inv.summary["cost"]["per_pass_usd"] == pytest.approx(total / passed)
