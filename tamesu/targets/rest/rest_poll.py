"""``response.poll``: the agent answers somewhere else, so tamesu polls for its reply.

After the turn's request, ``request.capture`` keeps values from its answer as ``{{sent.NAME}}``,
then ``poll.url`` is requested every ``interval`` until something new arrives (or ``timeout``).
With ``cursor`` every poll answer holds only what is new (a watermark); without it each answer is
the whole thread and only matches past those already seen count. In both cases the user's own
message, when the paths select it too, is skipped once.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tamesu.durations import format_duration, parse_duration
from tamesu.errors import TargetError
from tamesu.jsonpath import find
from tamesu.kernel.messages import Message, UserTurn
from tamesu.targets.rest.rest_read import Extract, decode_text
from tamesu.wire.connect import render_call, request, snippet

if TYPE_CHECKING:
    from tamesu.targets.rest.adapter import RestAdapter
    from tamesu.targets.rest.settings import RESTPoll
    from tamesu.templates import Scope

__all__ = ["PollState", "poll_turn"]


@dataclass
class PollState:
    """What the polls of one session have seen so far."""

    cursor: Any = ""
    seen: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Without a cursor: per rendered poll request, how many text and tool matches were seen."""


def _state(t: RestAdapter) -> PollState:
    state = getattr(t, "_poll_state", None)
    if state is None:
        state = PollState()
        t._poll_state = state  # type: ignore[attr-defined]
    return state


async def poll_turn(t: RestAdapter, user: UserTurn | None, scope: Scope) -> AsyncGenerator[Message, None]:
    """Send the turn, then poll until the reply is complete."""
    ctx, poll = t.ctx, t.poll
    assert poll is not None
    state = _state(t)
    builder = t.builder(sent_at=None, join="\n")
    status: int | None = None
    if user is not None:
        call = t.turn_call(scope)
        builder.sent_at = ctx.clock.now()
        resp = await request(ctx, t.policy, call)
        if resp.status_code >= 400:
            for msg in t.read_answer(builder, resp.status_code, resp.headers.get("content-type"), resp.text):
                yield msg
            for msg in t.finish(builder):
                yield msg
            return
        _capture_sent(t, resp.text, resp.headers.get("content-type"), scope)
        status = resp.status_code
    sent_text = None if user is None else user.text
    interval = parse_duration(poll.interval or "500ms")
    timeout = parse_duration(poll.timeout or "60s")
    idle = parse_duration(poll.idle) if poll.idle else None
    start = ctx.clock.now()
    last_new = start
    while True:
        payload, key = await _poll_once(t, poll, scope, state)
        new, skipped = _new_content(t, poll, payload, state.seen, key, sent_text)
        if skipped:
            sent_text = None
        if new.has_content:
            for msg in builder.add(payload, new, status=status):
                yield msg
            last_new = ctx.clock.now()
            if idle is None or new.done:
                break
        now = ctx.clock.now()
        if builder.has_content and idle is not None and now - last_new >= idle:
            break
        if not builder.has_content and now - start >= timeout:
            raise TargetError(
                f"no reply within {format_duration(timeout)} polling {poll.url}", retryable=True
            )
        await ctx.clock.sleep(interval)
    for msg in t.finish(builder):
        yield msg


def _capture_sent(t: RestAdapter, text: str, content_type: str | None, scope: Scope) -> None:
    capture = t.request.capture if t.request is not None else None
    if not capture:
        return
    data, is_json = decode_text(text, t.ctx.limits.json_depth)
    if not is_json:
        kind = (content_type or "no content type").split(";")[0]
        raise TargetError(
            f"agent answered non-JSON ({kind}) to the sent message: {snippet(text)}", retryable=False
        )
    for name, path in capture.items():
        found = find(path, data)
        if not found:
            raise TargetError(f"the answer to the sent message has nothing at {path} (capture {name})")
        scope.set(f"sent.{name}", found[0])


async def _poll_once(t: RestAdapter, poll: RESTPoll, scope: Scope, state: PollState) -> tuple[Any, str]:
    """One poll; returns its JSON answer and a key naming the rendered request."""
    poll_scope = scope.child({"cursor": "" if state.cursor is None else state.cursor})
    call = render_call(
        t.ctx,
        poll_scope,
        url=poll.url,
        method=poll.method,
        headers=poll.headers,
        body=poll.body,
        default_method="GET",
    )
    resp = await request(t.ctx, t.policy, call)
    if resp.status_code >= 400:
        raise TargetError(
            f"poll answered {resp.status_code} at {call.url}: {snippet(resp.text)}", retryable=False
        )
    payload, is_json = decode_text(resp.text, t.ctx.limits.json_depth)
    if not is_json:
        kind = (resp.headers.get("content-type") or "no content type").split(";")[0]
        raise TargetError(f"poll answered non-JSON ({kind}): {snippet(resp.text)}", retryable=False)
    if poll.cursor:
        found = find(poll.cursor, payload)
        if found and found[0] is not None:
            state.cursor = found[0]
    return payload, f"{call.method} {call.url} {call.body!r}"


def _new_content(
    t: RestAdapter,
    poll: RESTPoll,
    payload: Any,
    seen: dict[str, tuple[int, int]],
    key: str,
    sent_text: str | None,
) -> tuple[Extract, bool]:
    """What this poll answer adds to the turn, and whether the user's own message was skipped.

    Without a cursor the answer is a whole thread: matches past those an earlier poll of the same
    request saw are new (a thread that shrank starts over).
    """
    extract = t.reader.read(payload, at=t.ctx.clock.now())
    if not poll.cursor:
        texts, tools = extract.texts, extract.tool_calls
        seen_texts, seen_tools = seen.get(key, (0, 0))
        seen[key] = (len(texts), len(tools))
        if len(texts) < seen_texts or len(tools) < seen_tools:
            return Extract(), False
        extract = Extract(
            texts=texts[seen_texts:],
            tool_calls=tools[seen_tools:],
            done=extract.done and (len(texts) > seen_texts or len(tools) > seen_tools),
        )
    if sent_text is not None and extract.texts and extract.texts[0] == sent_text:
        extract.texts = extract.texts[1:]
        return extract, True
    return extract, False
