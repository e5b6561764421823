"""The loopback LiveKit server's RoomService and AgentDispatchService over Twirp, called with
livekit-api's own client (protobuf) and as JSON, and what SDK participants in the room see."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

pytest.importorskip("livekit.rtc")
pytest.importorskip("aiortc")

from livekit import api, rtc

from tamesu.testing.livekit_server import LivekitServer, serve_livekit_server

pytestmark = [pytest.mark.integration]

WAIT = 20.0


@pytest.fixture
async def server() -> AsyncIterator[LivekitServer]:
    async with serve_livekit_server() as s:
        yield s


@pytest.fixture
async def lkapi(server: LivekitServer) -> AsyncIterator[api.LiveKitAPI]:
    client = api.LiveKitAPI(server.url.replace("ws://", "http://"), server.api_key, server.api_secret)
    yield client
    await client.aclose()


@pytest.fixture
async def rooms() -> AsyncIterator[list[rtc.Room]]:
    joined: list[rtc.Room] = []
    yield joined
    for room in joined:
        await room.disconnect()


async def join(server: LivekitServer, rooms: list[rtc.Room], identity: str, room: str = "desk") -> rtc.Room:
    participant = rtc.Room()
    await participant.connect(server.url, server.token(identity, room, can_update_own_metadata=True))
    rooms.append(participant)
    return participant


def when(
    room: rtc.Room, event: str, test: Callable[..., bool] = lambda *_: True
) -> asyncio.Future[tuple[Any, ...]]:
    """A future of the first ``event`` on ``room`` whose arguments pass ``test``."""
    future: asyncio.Future[tuple[Any, ...]] = asyncio.get_running_loop().create_future()

    def handler(*args: Any) -> None:
        if not future.done() and test(*args):
            future.set_result(args)

    room.on(event, handler)
    return future


async def test_rooms_are_created_listed_updated_and_deleted(
    lkapi: api.LiveKitAPI, server: LivekitServer
) -> None:
    made = await lkapi.room.create_room(api.CreateRoomRequest(name="desk", metadata="v1"))
    await lkapi.room.create_room(api.CreateRoomRequest(name="lobby"))
    assert made.name == "desk" and made.metadata == "v1" and made.sid.startswith("RM_")
    listed = await lkapi.room.list_rooms(api.ListRoomsRequest())
    assert sorted(r.name for r in listed.rooms) == ["desk", "lobby"]
    only = await lkapi.room.list_rooms(api.ListRoomsRequest(names=["lobby"]))
    assert [r.name for r in only.rooms] == ["lobby"]
    updated = await lkapi.room.update_room_metadata(api.UpdateRoomMetadataRequest(room="desk", metadata="v2"))
    assert updated.metadata == "v2" and server.rooms["desk"].metadata == "v2"
    await lkapi.room.delete_room(api.DeleteRoomRequest(room="lobby"))
    assert [r.name for r in (await lkapi.room.list_rooms(api.ListRoomsRequest())).rooms] == ["desk"]


async def test_participants_are_listed_updated_sent_data_and_removed(
    lkapi: api.LiveKitAPI, server: LivekitServer, rooms: list[rtc.Room]
) -> None:
    alice = await join(server, rooms, "alice")
    bob = await join(server, rooms, "bob")
    listed = await lkapi.room.list_participants(api.ListParticipantsRequest(room="desk"))
    assert sorted(p.identity for p in listed.participants) == ["alice", "bob"]
    got = await lkapi.room.get_participant(api.RoomParticipantIdentity(room="desk", identity="alice"))
    assert got.identity == "alice" and got.sid == alice.local_participant.sid

    seen_attrs = when(bob, "participant_attributes_changed", lambda changed, p: p.identity == "alice")
    seen_meta = when(bob, "participant_metadata_changed", lambda p, old, new: p.identity == "alice")
    own_attrs = when(alice, "participant_attributes_changed", lambda changed, p: p.identity == "alice")
    info = await lkapi.room.update_participant(
        api.UpdateParticipantRequest(
            room="desk", identity="alice", metadata="vip", attributes={"tier": "gold"}
        )
    )
    assert info.metadata == "vip" and dict(info.attributes) == {"tier": "gold"}
    changed, remote = await asyncio.wait_for(seen_attrs, WAIT)
    assert changed == {"tier": "gold"} and remote.attributes == {"tier": "gold"}
    _, old, new = await asyncio.wait_for(seen_meta, WAIT)
    assert (old, new) == ("", "vip")
    await asyncio.wait_for(own_attrs, WAIT)
    assert alice.local_participant.attributes == {"tier": "gold"}

    packet = when(bob, "data_received")
    await lkapi.room.send_data(
        api.SendDataRequest(
            room="desk",
            data=b"to bob",
            kind=api.DataPacket.RELIABLE,
            destination_identities=["bob"],
            topic="ops",
        )
    )
    (data,) = await asyncio.wait_for(packet, WAIT)
    assert (data.data, data.topic) == (b"to bob", "ops")

    gone = when(alice, "disconnected")
    await lkapi.room.remove_participant(api.RoomParticipantIdentity(room="desk", identity="alice"))
    await asyncio.wait_for(gone, WAIT)
    listed = await lkapi.room.list_participants(api.ListParticipantsRequest(room="desk"))
    assert [p.identity for p in listed.participants] == ["bob"]


async def test_a_participants_own_attribute_and_metadata_updates_reach_the_others(
    server: LivekitServer, rooms: list[rtc.Room]
) -> None:
    alice = await join(server, rooms, "alice")
    bob = await join(server, rooms, "bob")
    attrs = when(bob, "participant_attributes_changed", lambda changed, p: "mood" in changed)
    await alice.local_participant.set_attributes({"mood": "calm"})
    changed, remote = await asyncio.wait_for(attrs, WAIT)
    assert changed == {"mood": "calm"} and remote.identity == "alice"
    meta = when(bob, "participant_metadata_changed", lambda p, old, new: new == "away")
    await alice.local_participant.set_metadata("away")
    await asyncio.wait_for(meta, WAIT)
    assert server.rooms["desk"].members["alice"].info.metadata == "away"
    assert dict(server.rooms["desk"].members["alice"].info.attributes) == {"mood": "calm"}


async def test_dispatches_are_created_listed_and_deleted(
    lkapi: api.LiveKitAPI, server: LivekitServer
) -> None:
    started: list[str] = []

    async def agent(job: Any) -> None:
        started.append(job.metadata)

    server.register_agent("helper", agent)
    made = await lkapi.agent_dispatch.create_dispatch(
        api.CreateAgentDispatchRequest(agent_name="helper", room="desk", metadata="ticket 7")
    )
    assert made.id.startswith("AD_") and made.agent_name == "helper"
    assert [d.id for d in await lkapi.agent_dispatch.list_dispatch("desk")] == [made.id]
    deleted = await lkapi.agent_dispatch.delete_dispatch(made.id, "desk")
    assert deleted.id == made.id and await lkapi.agent_dispatch.list_dispatch("desk") == []
    assert started == ["ticket 7"], "the registered agent was started with the dispatch's metadata"
    assert server.problems == []


async def test_errors_are_twirp_errors(lkapi: api.LiveKitAPI, server: LivekitServer) -> None:
    with pytest.raises(api.TwirpError) as missing:
        await lkapi.room.list_participants(api.ListParticipantsRequest(room="nowhere"))
    assert missing.value.code == "not_found"
    weak = server.token("caller", "desk")  # may join the room, not list rooms
    async with aiohttp_session() as http:
        response = await http.post(
            f"{http_url(server)}/twirp/livekit.RoomService/ListRooms",
            json={},
            headers={"Authorization": f"Bearer {weak}"},
        )
        assert response.status == 403 and (await response.json())["code"] == "permission_denied"
        response = await http.post(f"{http_url(server)}/twirp/livekit.RoomService/ListRooms", json={})
        assert response.status == 401 and (await response.json())["code"] == "unauthenticated"


async def test_room_admin_without_a_room_administers_no_room(
    lkapi: api.LiveKitAPI, server: LivekitServer, rooms: list[rtc.Room]
) -> None:
    await join(server, rooms, "caller", "desk")
    grants = {"room_admin": True}
    for name, token in (
        (
            "no room",
            api.AccessToken(server.api_key, server.api_secret).with_grants(api.VideoGrants(**grants)),
        ),
        (
            "another room",
            api.AccessToken(server.api_key, server.api_secret).with_grants(
                api.VideoGrants(room="lobby", **grants)
            ),
        ),
    ):
        async with aiohttp_session() as http:
            response = await http.post(
                f"{http_url(server)}/twirp/livekit.RoomService/RemoveParticipant",
                json={"room": "desk", "identity": "caller"},
                headers={"Authorization": f"Bearer {token.to_jwt()}"},
            )
            assert response.status == 403, name
            assert (await response.json())["code"] == "permission_denied"
    listed = await lkapi.room.list_participants(api.ListParticipantsRequest(room="desk"))
    assert [p.identity for p in listed.participants] == ["caller"], "the caller is still in the room"


def http_url(server: LivekitServer) -> str:
    return server.url.replace("ws://", "http://")


def aiohttp_session() -> Any:
    import aiohttp

    return aiohttp.ClientSession()


def admin_token(server: LivekitServer) -> str:
    grants = api.VideoGrants(room_create=True, room_list=True, room_admin=True)
    return api.AccessToken(server.api_key, server.api_secret).with_grants(grants).to_jwt()


async def test_the_json_encoding_answers_in_json(server: LivekitServer) -> None:
    headers = {"Authorization": f"Bearer {admin_token(server)}"}
    base = f"{http_url(server)}/twirp/livekit.RoomService"
    async with aiohttp_session() as http:
        made = await http.post(f"{base}/CreateRoom", json={"name": "desk", "metadata": "v1"}, headers=headers)
        assert made.status == 200 and made.content_type == "application/json"
        assert (await made.json())["name"] == "desk"
        listed = await http.post(f"{base}/ListRooms", json={"names": ["desk"]}, headers=headers)
        assert [r["name"] for r in (await listed.json())["rooms"]] == ["desk"]
        bad = await http.post(
            f"{base}/CreateRoom", data=b"{not json", headers={**headers, "Content-Type": "application/json"}
        )
        assert bad.status == 400 and (await bad.json())["code"] == "malformed"
        unknown = await http.post(f"{base}/Teleport", json={}, headers=headers)
        assert unknown.status == 404 and json.loads(await unknown.text())["code"] == "bad_route"
