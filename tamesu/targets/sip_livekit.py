"""A sip target's call placed through a LiveKit SIP trunk (``trunk_id`` / ``sip.outbound_trunk_id``).

LiveKit would dial ``to`` from its trunk (``CreateSIPParticipant`` of ``livekit-api``) and bridge
the answered call into the room named by ``room``; tamesu's side of the call would then be a
participant of that room, heard and spoken through the ``livekit`` target's media path. That path
is not part of this version, so a trunk call is refused before anything is dialled (a call placed
into a room nobody from tamesu joins would ring a real phone for nothing). A first version of the
dialling is in the history of this file (commit "A SIP user agent of our own"), untested.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

from tamesu.errors import TargetError

if TYPE_CHECKING:
    from tamesu.targets.sip import SipAdapter

__all__ = ["dial_through_livekit"]


async def dial_through_livekit(adapter: SipAdapter, trunk: str) -> NoReturn:
    """Refuse the call: placing sip calls through a LiveKit trunk is not supported yet."""
    raise TargetError(
        f"the sip target's trunk_id ({trunk!r}, a LiveKit SIP trunk) is not supported in this version of "
        "tamesu: its call would be heard in a LiveKit room, which the sip target does not join yet. "
        "Remove trunk_id (and sip.outbound_trunk_id) to call `to` with tamesu's own SIP user agent",
        retryable=False,
        kind="config",
    )
