"""A reference agent serving tamesu's gRPC protocol (schema/agent.proto): copy it and put your agent
where ``reply`` is.

    python examples/grpc_agent/server.py --port 9090 [--token SECRET] [--reflection]
    tamesu run examples/grpc_agent/suite.yaml

It answers like the demo agent (returns within 30 days, order status for ORD-<digits> with a
lookup_order tool call, a handoff to a person, "bye" ends the session), streaming its reply in
word-sized deltas. With ``--token`` a call without ``authorization: Bearer TOKEN`` metadata is
refused with UNAUTHENTICATED; ``--reflection`` turns on gRPC server reflection (needs
grpcio-reflection). To generate stubs of your own instead of importing tamesu's:
``python -m grpc_tools.protoc -I schema --python_out=. --grpc_python_out=. schema/agent.proto``.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections.abc import AsyncIterator, Iterator

import grpc
from google.protobuf import struct_pb2

from tamesu.targets.grpc.grpc_stubs import agent_pb2 as pb
from tamesu.targets.grpc.grpc_stubs import agent_pb2_grpc

RETURN_DAYS = 30
STATUSES = ("processing", "shipped", "out for delivery", "delivered")


def reply(text: str) -> Iterator[pb.AgentEvent]:
    """The agent's answer to one user turn, as events (the first rule that applies wins); the
    caller adds TurnEnd unless a SessionEnd is among them."""
    lower = text.lower()
    if re.search(r"\b(human|person|someone real)\b", lower):
        department = "billing" if re.search(r"refund|charge|invoice|billing", lower) else "support"
        yield from _say(f"Of course. I'm transferring you to our {department} team now.")
        yield pb.AgentEvent(handoff=pb.Handoff(to=department, summary=f"Customer asked for a person: {text}"))
        return
    if re.search(r"\b(bye|goodbye)\b", lower):
        yield from _say("Thanks for contacting Mochi Shoes. Goodbye!")
        yield pb.AgentEvent(session_end=pb.SessionEnd(reason="goodbye"))
        return
    order = re.search(r"\bORD-(\d+)\b", text, re.IGNORECASE)
    if order:
        order_id = f"ORD-{order.group(1)}"
        status = STATUSES[sum(map(int, order.group(1))) % len(STATUSES)]
        args, result = struct_pb2.Struct(), struct_pb2.Value()
        args.update({"order_id": order_id})
        result.struct_value.update({"order_id": order_id, "status": status})
        yield pb.AgentEvent(tool_call=pb.ToolCall(id="call-1", name="lookup_order", arguments=args))
        yield pb.AgentEvent(tool_result=pb.ToolResult(id="call-1", name="lookup_order", result=result))
        yield from _say(f"Your order {order_id} is {status}.")
        return
    if re.search(r"return|refund", lower):
        days = re.search(r"(\d+)\s*days?", lower)
        policy = f"returns are accepted within {RETURN_DAYS} days of delivery"
        if days and int(days.group(1)) > RETURN_DAYS:
            yield from _say(f"I'm sorry, {policy}, so a return after {days.group(1)} days is not possible.")
        else:
            yield from _say(f"Our policy: {policy}.")
        return
    yield from _say(
        "I can help with returns, order status (tell me your ORD- number) or connect you to a person."
    )


def _say(text: str) -> Iterator[pb.AgentEvent]:
    for piece in re.findall(r"\S+\s*", text) or [text]:
        yield pb.AgentEvent(text=pb.TextDelta(text=piece))


class SupportAgent(agent_pb2_grpc.AgentServicer):
    def __init__(self, token: str | None = None) -> None:
        self.token = token

    async def Converse(
        self, request_iterator: AsyncIterator[pb.ClientEvent], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.AgentEvent]:
        if self.token is not None:
            metadata = dict(context.invocation_metadata() or ())
            if metadata.get("authorization") != f"Bearer {self.token}":
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        async for event in request_iterator:
            if event.HasField("start"):
                continue  # event.start.session_id names the conversation
            ended = False
            for out in reply(event.user_turn.text):
                ended = ended or out.HasField("session_end")
                yield out
            if ended:
                return
            yield pb.AgentEvent(turn_end=pb.TurnEnd())


async def serve(port: int, *, token: str | None = None, reflection: bool = False) -> None:
    server = grpc.aio.server()
    agent_pb2_grpc.add_AgentServicer_to_server(SupportAgent(token), server)
    if reflection:
        from grpc_reflection.v1alpha import reflection as grpc_reflection

        names = (pb.DESCRIPTOR.services_by_name["Agent"].full_name, grpc_reflection.SERVICE_NAME)
        grpc_reflection.enable_server_reflection(names, server)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print(f"listening {bound}", flush=True)
    await server.wait_for_termination()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9090, help="0 picks a free port (printed on stdout)")
    parser.add_argument("--token", help="require this bearer token in the authorization metadata")
    parser.add_argument("--reflection", action="store_true", help="serve gRPC server reflection")
    args = parser.parse_args(argv)
    try:
        asyncio.run(serve(args.port, token=args.token, reflection=args.reflection))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
