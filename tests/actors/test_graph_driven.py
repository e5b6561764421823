"""The text graph is driven: the run's task does the talking, with no task per actor."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import pytest

from tamesu.actors.graph import run_graph
from tamesu.actors.services import RunServices
from tamesu.config.targets.base import TalkingTarget
from tamesu.kernel.messages import Message, UserTurn
from tamesu.targets.base import target

from .agents import EchoAdapter, make_spec

pytestmark = [pytest.mark.unit, pytest.mark.timing]


class TaskWatchingAdapter(EchoAdapter):
    """Echoes, noting the task each turn runs in and the tasks alive meanwhile."""

    seen: ClassVar[list[tuple[Any, int]]] = []

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        TaskWatchingAdapter.seen.append((asyncio.current_task(), len(asyncio.all_tasks())))
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
    tasks_before = len(asyncio.all_tasks())
    out = await run_graph(make_spec(type="test-task-watching", say=["a", "b", "c"]), services)
    assert out.error is None and [t.text for t in out.transcript.user_turns()] == ["a", "b", "c"]
    me = asyncio.current_task()
    assert [task for task, _ in TaskWatchingAdapter.seen] == [me, me, me]
    assert all(alive == tasks_before for _, alive in TaskWatchingAdapter.seen)
    assert out.transcript.end_reason == "done" and out.results == []
