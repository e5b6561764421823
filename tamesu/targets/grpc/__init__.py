"""The ``grpc`` target: an agent served over gRPC (tamesu's agent.proto, stubs in ``grpc_stubs``).

``settings`` is its config model; nothing is imported here (``tamesu.targets``)."""

__all__: list[str] = []
