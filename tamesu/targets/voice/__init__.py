"""The ``voice`` target: an agent that talks over a generic audio websocket.

``settings`` is its config model; nothing is imported here (``tamesu.targets``)."""

__all__: list[str] = []
