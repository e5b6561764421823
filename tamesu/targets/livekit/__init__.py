"""The ``livekit`` target: an agent in a LiveKit room, tamesu its simulated caller.

``settings`` is its config model; nothing is imported here (``tamesu.targets``)."""

__all__: list[str] = []
