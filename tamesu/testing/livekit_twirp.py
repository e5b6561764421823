"""The loopback LiveKit server's ``RoomService``, ``AgentDispatchService`` and ``SIP`` service over Twirp.

Twirp is a POST of a protobuf (``application/protobuf``) or its JSON (``application/json``) to
``/twirp/livekit.<Service>/<Method>``, answered in the same encoding; errors are JSON
``{"code", "msg"}`` with an HTTP status. Calls carry a bearer token signed with the API secret
whose grants allow them (``roomCreate``, ``roomList``, ``roomAdmin`` for the room; the SIP grants
``admin`` for trunks and ``call`` for ``CreateSIPParticipant``), as on LiveKit. The SIP methods
are ``livekit_sip``'s; a call that is not answered is an error whose ``meta`` has its SIP status.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from livekit.protocol import agent_dispatch as dispatch_pb
from livekit.protocol import models
from livekit.protocol import room as room_pb
from livekit.protocol import sip as sip_pb

from .livekit_sip import SipDialError

if TYPE_CHECKING:
    from .livekit_server import LivekitServer

__all__ = ["twirp_routes"]

Handler = Callable[[Any, Any], Awaitable[Message]]
"""(request message, the caller's video grants) -> response message."""


class TwirpError(Exception):
    def __init__(self, code: str, msg: str, status: int, meta: dict[str, str] | None = None) -> None:
        super().__init__(msg)
        self.code, self.msg, self.status, self.meta = code, msg, status, meta or {}


def _need(grants: Any, grant: str, room: str | None = None) -> None:
    if grants is None or not getattr(grants, grant, False):
        raise TwirpError("permission_denied", f"the token lacks the {grant} grant", 403)
    if room is not None and grant == "room_admin" and grants.room != room:
        # as LiveKit: roomAdmin is for the token's room, and a token naming none administers none
        raise TwirpError("permission_denied", f"the token is not for room {room}", 403)


def _methods(server: LivekitServer) -> dict[str, tuple[type[Message], Handler]]:
    def existing(name: str) -> Any:
        room = server.rooms.get(name)
        if room is None:
            raise TwirpError("not_found", f"room {name} does not exist", 404)
        return room

    async def create_room(req: room_pb.CreateRoomRequest, grants: Any) -> Message:
        _need(grants, "room_create")
        room = server.room(req.name, metadata=req.metadata)
        for agent in req.agents:
            server.dispatch(agent.agent_name, req.name, agent.metadata)
        return room.info()

    async def list_rooms(req: room_pb.ListRoomsRequest, grants: Any) -> Message:
        _need(grants, "room_list")
        names = set(req.names)
        return room_pb.ListRoomsResponse(
            rooms=[r.info() for r in server.rooms.values() if not names or r.name in names]
        )

    async def delete_room(req: room_pb.DeleteRoomRequest, grants: Any) -> Message:
        _need(grants, "room_create")
        await server.close_room(req.room)
        return room_pb.DeleteRoomResponse()

    async def list_participants(req: room_pb.ListParticipantsRequest, grants: Any) -> Message:
        _need(grants, "room_admin", req.room)
        return room_pb.ListParticipantsResponse(
            participants=[m.info for m in existing(req.room).members.values()]
        )

    async def get_participant(req: room_pb.RoomParticipantIdentity, grants: Any) -> Message:
        _need(grants, "room_admin", req.room)
        member = existing(req.room).members.get(req.identity)
        if member is None:
            raise TwirpError("not_found", f"participant {req.identity} is not in the room", 404)
        return member.info

    async def remove_participant(req: room_pb.RoomParticipantIdentity, grants: Any) -> Message:
        _need(grants, "room_admin", req.room)
        if not await existing(req.room).remove(req.identity):
            raise TwirpError("not_found", f"participant {req.identity} is not in the room", 404)
        return room_pb.RemoveParticipantResponse()

    async def update_participant(req: room_pb.UpdateParticipantRequest, grants: Any) -> Message:
        _need(grants, "room_admin", req.room)
        room = existing(req.room)
        member = room.members.get(req.identity)
        if member is None:
            raise TwirpError("not_found", f"participant {req.identity} is not in the room", 404)
        member.describe(metadata=req.metadata, name=req.name, attributes=req.attributes)
        await room.update(member)
        return member.info

    async def send_data(req: room_pb.SendDataRequest, grants: Any) -> Message:
        _need(grants, "room_admin", req.room)
        packet = models.DataPacket(
            kind=req.kind,
            destination_identities=list(req.destination_identities),
            user=models.UserPacket(payload=req.data, topic=req.topic or None),
        )
        existing(req.room).send_data(packet, reliable=req.kind == models.DataPacket.RELIABLE)
        return room_pb.SendDataResponse()

    async def update_room_metadata(req: room_pb.UpdateRoomMetadataRequest, grants: Any) -> Message:
        _need(grants, "room_admin", req.room)
        room = existing(req.room)
        room.metadata = req.metadata
        return room.info()

    async def create_dispatch(req: dispatch_pb.CreateAgentDispatchRequest, grants: Any) -> Message:
        _need(grants, "room_admin", req.room)
        return server.dispatch(req.agent_name, req.room, req.metadata)

    async def delete_dispatch(req: dispatch_pb.DeleteAgentDispatchRequest, grants: Any) -> Message:
        _need(grants, "room_admin", req.room)
        kept = server.dispatches.get(req.room, [])
        for dispatch in kept:
            if dispatch.id == req.dispatch_id:
                kept.remove(dispatch)
                return dispatch
        raise TwirpError("not_found", f"dispatch {req.dispatch_id} does not exist", 404)

    async def list_dispatch(req: dispatch_pb.ListAgentDispatchRequest, grants: Any) -> Message:
        _need(grants, "room_admin", req.room)
        found = [
            d for d in server.dispatches.get(req.room, []) if not req.dispatch_id or d.id == req.dispatch_id
        ]
        return dispatch_pb.ListAgentDispatchResponse(agent_dispatches=found)

    async def create_trunk(req: sip_pb.CreateSIPOutboundTrunkRequest, grants: Any) -> Message:
        _need(grants, "admin")
        return server.sip.create_trunk(req)

    async def list_trunks(req: sip_pb.ListSIPOutboundTrunkRequest, grants: Any) -> Message:
        _need(grants, "admin")
        return server.sip.list_trunks(req)

    async def create_sip_participant(req: sip_pb.CreateSIPParticipantRequest, grants: Any) -> Message:
        _need(grants, "call")
        if req.sip_trunk_id not in server.sip.trunks:
            raise TwirpError("not_found", f"no outbound trunk {req.sip_trunk_id}", 404)
        if not req.room_name or not req.sip_call_to:
            raise TwirpError("invalid_argument", "room_name and sip_call_to are required", 400)
        server.room(req.room_name)
        try:
            return await server.sip.create_participant(req)
        except SipDialError as exc:
            raise TwirpError(exc.code, exc.msg, exc.status, exc.meta) from None

    return {
        "livekit.SIP/CreateSIPOutboundTrunk": (sip_pb.CreateSIPOutboundTrunkRequest, create_trunk),
        "livekit.SIP/ListSIPOutboundTrunk": (sip_pb.ListSIPOutboundTrunkRequest, list_trunks),
        "livekit.SIP/CreateSIPParticipant": (sip_pb.CreateSIPParticipantRequest, create_sip_participant),
        "livekit.RoomService/CreateRoom": (room_pb.CreateRoomRequest, create_room),
        "livekit.RoomService/ListRooms": (room_pb.ListRoomsRequest, list_rooms),
        "livekit.RoomService/DeleteRoom": (room_pb.DeleteRoomRequest, delete_room),
        "livekit.RoomService/ListParticipants": (room_pb.ListParticipantsRequest, list_participants),
        "livekit.RoomService/GetParticipant": (room_pb.RoomParticipantIdentity, get_participant),
        "livekit.RoomService/RemoveParticipant": (room_pb.RoomParticipantIdentity, remove_participant),
        "livekit.RoomService/UpdateParticipant": (room_pb.UpdateParticipantRequest, update_participant),
        "livekit.RoomService/SendData": (room_pb.SendDataRequest, send_data),
        "livekit.RoomService/UpdateRoomMetadata": (room_pb.UpdateRoomMetadataRequest, update_room_metadata),
        "livekit.AgentDispatchService/CreateDispatch": (
            dispatch_pb.CreateAgentDispatchRequest,
            create_dispatch,
        ),
        "livekit.AgentDispatchService/DeleteDispatch": (
            dispatch_pb.DeleteAgentDispatchRequest,
            delete_dispatch,
        ),
        "livekit.AgentDispatchService/ListDispatch": (dispatch_pb.ListAgentDispatchRequest, list_dispatch),
    }


def twirp_routes(server: LivekitServer) -> list[web.RouteDef]:
    """The Twirp routes of ``server``'s services."""
    methods = _methods(server)

    async def handle(request: web.Request) -> web.StreamResponse:
        path = request.match_info["method"]
        as_json = request.content_type == "application/json"
        try:
            if path not in methods:
                raise TwirpError("bad_route", f"no method {path}", 404)
            kind, handler = methods[path]
            auth = request.headers.get("Authorization", "")
            if not auth.startswith("Bearer "):
                raise TwirpError("unauthenticated", "no bearer token", 401)
            try:
                claims = server.verify(auth.removeprefix("Bearer "))
                grants = claims.sip if path.startswith("livekit.SIP/") else claims.video
            except Exception:
                raise TwirpError("unauthenticated", "invalid token", 401) from None
            body = await request.read()
            message = kind()
            try:
                if as_json:
                    json_format.Parse(body or b"{}", message, ignore_unknown_fields=True)
                else:
                    message.ParseFromString(body)
            except (json_format.ParseError, DecodeError, UnicodeDecodeError) as exc:
                raise TwirpError("malformed", f"unreadable request: {exc}", 400) from None
            reply = await handler(message, grants)
        except TwirpError as exc:
            error: dict[str, object] = {"code": exc.code, "msg": exc.msg}
            if exc.meta:
                error["meta"] = exc.meta
            return web.json_response(error, status=exc.status)
        if as_json:
            return web.Response(text=json_format.MessageToJson(reply), content_type="application/json")
        return web.Response(body=reply.SerializeToString(), content_type="application/protobuf")

    return [web.post("/twirp/{method:livekit\\.[A-Za-z]+/[A-Za-z]+}", handle)]
