"""The ``pipecat`` target: a Pipecat bot over RTVI, on its websocket or its small WebRTC transport.

``settings`` is its config model; nothing is imported here (``tamesu.targets``)."""

__all__: list[str] = []
