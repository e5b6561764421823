"""The ``twilio`` target: tamesu plays Twilio, calling the agent's Media Streams websocket.

``settings`` is its config model; nothing is imported here (``tamesu.targets``)."""

__all__: list[str] = []
