"""Recognising that the agent handed the conversation to a person, for any target type.

The suite's ``handoff:`` names one signal (a tool call, a JSONPath in the raw response, or a regex
on the reply) and where the destination and the summary are. Targets call ``detect_handoff`` with
what one agent turn contained and yield the ``Handoff`` message it returns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from tamesu.jsonpath import find, first, truthy
from tamesu.kernel.messages import Handoff, ToolCall

if TYPE_CHECKING:
    from tamesu.config.target_base import HandoffSignal
    from tamesu.kernel.transcript import ToolCallRecord

__all__ = ["detect_handoff"]


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _path_in(raws: Iterable[Any], path: str | None) -> str | None:
    if not path:
        return None
    for body in raws:
        value = first(path, body)
        if value is not None:
            return _as_text(value)
    return None


def detect_handoff(
    signal: HandoffSignal | None,
    *,
    text: str,
    tool_calls: Sequence[ToolCall | ToolCallRecord] = (),
    raw: Sequence[Any] = (),
    at: float = 0.0,
) -> Handoff | None:
    """The Handoff this turn shows under ``signal``, or None.

    ``tool``: a call of that tool; ``to``/``summary`` are argument names. ``json_path``: present
    and not false in a raw response; ``to``/``summary`` are JSONPaths into it. ``regex``: a match
    on the reply text; ``to`` is a JSONPath when given, else the first group.
    """
    if signal is None:
        return None
    if signal.tool:
        for call in tool_calls:
            if call.name == signal.tool:
                args = call.args or {}
                return Handoff(
                    to=_as_text(args.get(signal.to)) if signal.to else None,
                    summary=_as_text(args.get(signal.summary)) if signal.summary else None,
                    at=at,
                )
        return None
    if signal.json_path:
        for body in raw:
            if truthy(find(signal.json_path, body)):
                return Handoff(
                    to=_path_in([body], signal.to), summary=_path_in([body], signal.summary), at=at
                )
        return None
    if signal.regex:
        match = re.search(signal.regex, text or "")
        if match is None:
            return None
        to = _path_in(raw, signal.to)
        if to is None and match.groups():
            to = match.group(1)
        return Handoff(to=to, summary=_path_in(raw, signal.summary), at=at)
    return None
