"""The text graph is driven: the run's task does the talking, with no task per actor."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tamesu.actors.graph import run_graph
from tamesu.actors.services import RunServices
from tamesu.config.target_base import TalkingTarget
from tamesu.kernel.messages import Message, UserTurn
from tamesu.targets.base import target

from .agents import EchoAdapter, make_spec

pytestmark = [pytest.mark.unit, pytest.mark.timing]


SOURCE = tuple(str(Path(__file__).resolve().parents[2] / d) for d in ("tamesu", "actors", "audio"))


def tamesu_tasks() -> set[asyncio.Task[Any]]:
    """The loop's tasks running tamesu's own code (not a finaliser another test's library left)."""
    out = set()
    for task in asyncio.all_tasks():
        code = getattr(task.get_coro(), "cr_code", None)
        if code is not None and code.co_filename.startswith(SOURCE):
            out.add(task)
    return out


class TaskWatchingAdapter(EchoAdapter):
    """Echoes, noting the task each turn runs in and tamesu's tasks alive meanwhile."""

    seen: ClassVar[list[tuple[Any, set[asyncio.Task[Any]]]]] = []

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        TaskWatchingAdapter.seen.append((asyncio.current_task(), tamesu_tasks()))
        async for msg in super().turn(user):
            yield msg


@pytest.fixture
async def services() -> AsyncIterator[RunServices]:
    svc = RunServices.create()
    yield svc
    await svc.aclose()


async def test_every_turn_runs_in_the_runs_own_task(services: RunServices) -> None:
    target("test-task-watching", config=TalkingTarget)(TaskWatchingAdapter)
    TaskWatchingAdapter.seen.clear()
    tasks_before = tamesu_tasks()
    out = await run_graph(make_spec(type="test-task-watching", say=["a", "b", "c"]), services)
    assert out.error is None and [t.text for t in out.transcript.user_turns()] == ["a", "b", "c"]
    me = asyncio.current_task()
    assert [task for task, _ in TaskWatchingAdapter.seen] == [me, me, me]
    assert all(alive == tasks_before for _, alive in TaskWatchingAdapter.seen)
    assert out.transcript.end_reason == "done" and out.results == []
