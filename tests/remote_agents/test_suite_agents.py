"""Whose run a message to a suite's remote agents is: by its ids, by waiting, or nobody's."""

from __future__ import annotations

from typing import Any

import pytest

from tamesu.kernel.transcript import Transcript, Turn
from tamesu.remote_agents.suite_agents import AttachedRun, SuiteRemoteAgents

pytestmark = pytest.mark.unit


class Heard:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def add(self, agent: str, direction: str, *, text: str, **kw: Any) -> None:
        self.texts.append(text)


def attach(suite: SuiteRemoteAgents, run_id: str, *, context: str = "", waiting: bool = False) -> Heard:
    heard = Heard()
    turns = [Turn(role="user", text="hi")] if waiting else []
    transcript = Transcript(run_id=run_id, turns=turns)
    suite.attach(AttachedRun(run_id, heard, transcript, lambda: {context} if context else set()))  # type: ignore[arg-type]
    return heard


def test_a_message_goes_to_the_run_of_its_context_and_its_task_stays_there() -> None:
    suite = SuiteRemoteAgents("/s.yaml")
    a, b = attach(suite, "a", context="ctx-a"), attach(suite, "b", context="ctx-b")
    assert suite.run_of("ctx-b", "task-1").run_id == "b"  # type: ignore[union-attr]
    assert suite.run_of("", "task-1").run_id == "b", "a follow-up on the task"  # type: ignore[union-attr]
    assert suite.run_of("ctx-a", "").run_id == "a"  # type: ignore[union-attr]
    assert (a.texts, b.texts) == ([], [])


def test_without_ids_the_one_waiting_run_or_the_one_run_takes_it_else_nobody() -> None:
    suite = SuiteRemoteAgents("/s.yaml")
    attach(suite, "a", waiting=True)
    attach(suite, "b")
    assert suite.run_of("fresh-1", "").run_id == "a"  # type: ignore[union-attr]
    attach(suite, "c", waiting=True)
    assert suite.run_of("fresh-2", "") is None, "two runs wait: it cannot be told"
    assert suite.run_of("fresh-1", "").run_id == "a", "a context already given stays"  # type: ignore[union-attr]
    suite.detach("a")
    suite.detach("c")
    assert suite.run_of("fresh-1", "").run_id == "b", "a detached run's ids are forgotten"  # type: ignore[union-attr]
