"""A sip target's call placed through a LiveKit SIP trunk (``trunk_id`` / ``sip.outbound_trunk_id``).

LiveKit dials ``to`` from its trunk and bridges the answered call into the room named by ``room``;
the caller's side is then a participant of that room, which the ``livekit`` target's media path
joins. This module makes the SIP participant with ``livekit-api`` (the ``livekit`` extra) and maps
LiveKit's SIP status to how the call ended. It has not been run against a LiveKit server here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tamesu.errors import MissingExtraError, TargetError
from tamesu.templates import render_text

if TYPE_CHECKING:
    from tamesu.targets.sip import SipAdapter

__all__ = ["dial_through_livekit"]

_BUSY = ("486", "600")
_NO_ANSWER = ("408", "480", "487")


async def dial_through_livekit(adapter: SipAdapter, trunk: str) -> Any:
    """Ask LiveKit to call ``to`` through ``trunk`` into the target's room; the SIP participant's info."""
    try:
        from livekit import api
    except ImportError:
        raise MissingExtraError(
            "a sip target with trunk_id needs livekit-api: pip install 'tamesu[livekit]'"
        ) from None
    ctx, config = adapter.ctx, adapter.config
    lk = getattr(ctx, "livekit", None)
    url = getattr(lk, "url", None)
    key, secret = getattr(lk, "api_key", None), getattr(lk, "api_secret", None)
    if not (url and key and secret):
        raise TargetError(
            "a sip target with trunk_id needs livekit: url, api_key and api_secret in tamesu.yaml",
            retryable=False,
            kind="config",
        )
    scope = ctx.scope
    room = render_text(config.room, scope)
    request = api.CreateSIPParticipantRequest(
        sip_trunk_id=trunk,
        sip_call_to=render_text(config.to or "", scope),
        room_name=room,
        participant_identity=f"tamesu-{ctx.session}"[:64],
        wait_until_answered=True,
    )
    if config.from_:
        request.sip_number = render_text(config.from_, scope)
    async with api.LiveKitAPI(
        render_text(url, scope), render_text(key, scope), render_text(secret, scope)
    ) as client:
        try:
            info = await client.sip.create_sip_participant(request)
        except api.TwirpError as exc:
            status = str(getattr(exc, "metadata", {}).get("sip_status_code", ""))
            if status in _BUSY:
                adapter.report_end("busy", f"{status} (LiveKit)")
                return None
            if status in _NO_ANSWER:
                adapter.report_end("no_answer", f"{status} (LiveKit)")
                return None
            raise TargetError(f"LiveKit SIP: {exc.message}") from None
    raise TargetError(
        f"LiveKit placed the call into room {room!r} (participant {info.participant_identity}); "
        "hearing and speaking in a LiveKit room is the livekit target's, which a sip target does not join yet",
        retryable=False,
        kind="config",
    )
