"""``tamesu.run`` sets the garbage collector up for a batch of runs and leaves it as it found it;
a Ray worker sets it up once, for good."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from tamesu.cycle_collector import YOUNG_THRESHOLD, freeze_what_runs_left, paused, set_for_runs

pytestmark = pytest.mark.unit


def test_while_suites_load_the_collector_is_off_and_then_as_it_was() -> None:
    assert gc.isenabled()
    with paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with paused():
            pass
        assert not gc.isenabled(), "a collector someone else turned off stays off"
    finally:
        gc.enable()


def test_in_a_process_that_ends_after_its_command_the_paused_collector_stays_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tamesu import cycle_collector

    monkeypatch.setattr(cycle_collector, "_ENDING", False)
    cycle_collector.one_command_process()
    try:
        with paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_validate_leaves_the_collector_on_for_the_rest_of_the_process(tmp_path: Path) -> None:
    from tamesu.cli import main

    (tmp_path / "s.yaml").write_text(
        "suite: s\ntargets: {a: {type: rest, url: http://127.0.0.1:9}}\ntests: []\n"
    )
    main(["validate", str(tmp_path / "s.yaml")])
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_while_runs_go_on_older_objects_are_frozen_and_young_ones_collected_less_often() -> None:
    before = gc.get_threshold()
    with set_for_runs():
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (max(before[0], YOUNG_THRESHOLD), *before[1:])
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before


def test_a_process_that_froze_objects_itself_keeps_its_collector_as_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # told by what is asked of the collector: the count of frozen objects also drops whenever one
    # of them dies, in this thread or in one a previous test left running
    gc.freeze()
    try:
        before = gc.get_threshold()
        asked: list[str] = []
        for name in ("freeze", "unfreeze", "set_threshold"):
            monkeypatch.setattr(gc, name, lambda *args, name=name: asked.append(name))
        with set_for_runs():
            assert gc.get_threshold() == before
        assert asked == []
    finally:
        monkeypatch.undo()
        gc.unfreeze()


def test_what_the_runs_left_is_frozen_for_the_reports_and_unfrozen_with_the_runs() -> None:
    class Result:
        pass

    with set_for_runs():
        results = [Result() for _ in range(1000)]  # what a load test keeps until its report
        frozen = gc.get_freeze_count()
        freeze_what_runs_left()
        assert gc.get_freeze_count() >= frozen + len(results)
    assert gc.get_freeze_count() == 0, "leaving the runs unfreezes what they left: it can be collected"
    del results


def test_outside_the_runs_nothing_is_frozen_for_good(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    monkeypatch.setattr(gc, "freeze", lambda: asked.append("freeze"))
    freeze_what_runs_left()
    assert asked == []


def test_the_collector_comes_back_when_the_runs_fail() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), set_for_runs():
        raise RuntimeError("the scheduler broke")
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before


def test_a_worker_sets_its_collector_up_once_for_good(monkeypatch: pytest.MonkeyPatch) -> None:
    from tamesu import cycle_collector

    asked: list[tuple[str, tuple[int, ...]]] = []
    monkeypatch.setattr(cycle_collector, "_WORKER_SET", False)
    monkeypatch.setattr(gc, "freeze", lambda: asked.append(("freeze", ())))
    monkeypatch.setattr(gc, "set_threshold", lambda *t: asked.append(("set_threshold", t)))
    first, *rest = gc.get_threshold()
    cycle_collector.set_for_worker()
    cycle_collector.set_for_worker()
    assert asked == [("freeze", ()), ("set_threshold", (max(first, YOUNG_THRESHOLD), *rest))]
