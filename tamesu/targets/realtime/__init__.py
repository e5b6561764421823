"""The ``realtime`` target: an agent that speaks the OpenAI Realtime API over a websocket.

``settings`` is its config model; nothing is imported here (``tamesu.targets``)."""

__all__: list[str] = []
