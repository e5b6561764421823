"""``delegated_to``: the agent under test sent a message to one of the suite's remote agents.

The remote agents tamesu serves record every message they receive as a ``RemoteMessage`` event of
the transcript (``tamesu.remote_agents.exchanges``); this reads them. ``contains`` is forgiving as
the ``contains`` assertion is (case and whitespace); ``regex`` is ``re.search``. Each must hold for
some message to the agent; a message's data parts count as their JSON text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tamesu.assertions.compare import shorten, text_pattern
from tamesu.assertions.evaluation import AssertionContext, assertion
from tamesu.config.assertions.conversation import Delegation
from tamesu.kernel.events import RemoteMessage, TranscriptEvent
from tamesu.kernel.outcome import AssertionResult

__all__ = ["delegated_to", "messages_to"]


def messages_to(events: list[TranscriptEvent], agent: str) -> list[str]:
    """What the agent under test sent remote agent ``agent``: each message's words and data."""
    out = []
    for event in events:
        if isinstance(event, RemoteMessage) and event.agent == agent and event.direction == "received":
            parts = event.data if isinstance(event.data, list) else []
            data = [json.dumps(d, ensure_ascii=False, sort_keys=True) for d in parts]
            out.append("\n".join([event.text, *data]))
    return out


def _spec(spec: Any) -> tuple[str, str | None, str | None]:
    if isinstance(spec, str):
        return spec, None, None
    if isinstance(spec, dict):
        return spec["agent"], spec.get("contains"), spec.get("regex")
    return spec.agent, spec.contains, spec.regex


@assertion("delegated_to", spec=Delegation)
def delegated_to(spec: Delegation, ctx: AssertionContext) -> AssertionResult:
    """Some message went to the remote agent (with ``contains`` / ``regex``: one that says so)."""
    agent, contains, regex = _spec(spec)
    expected: dict[str, Any] = {"agent": agent}
    expected.update({k: v for k, v in (("contains", contains), ("regex", regex)) if v is not None})
    sent = messages_to(ctx.transcript.events, agent)
    if not sent:
        others = sorted(
            {e.agent for e in ctx.transcript.events if isinstance(e, RemoteMessage) and e.agent != agent}
        )
        elsewhere = f" (it messaged {', '.join(others)})" if others else ""
        return AssertionResult.of(
            False, expected=expected, actual=None, message=f"the agent sent no message to {agent}{elsewhere}"
        )
    if contains is not None:
        pattern = text_pattern(contains)
        if not any(pattern.search(text) for text in sent):
            return _missed(expected, sent, f"none of {len(sent)} message(s) to {agent} contains {contains!r}")
    if regex is not None:
        try:
            compiled = re.compile(regex)
        except re.error as exc:
            return AssertionResult.of(False, expected=expected, message=f"bad regular expression: {exc}")
        if not any(compiled.search(text) for text in sent):
            return _missed(expected, sent, f"/{regex}/ matches none of {len(sent)} message(s) to {agent}")
    return AssertionResult.of(True, expected=expected, actual=shorten(sent[-1]))


def _missed(expected: dict[str, Any], sent: list[str], message: str) -> AssertionResult:
    return AssertionResult.of(
        False, expected=expected, actual=[shorten(t) for t in sent[-3:]], message=message
    )
