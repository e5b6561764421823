"""The ``a2a`` target: an agent that speaks the Agent2Agent protocol (a2a-sdk client, parts, push notifications).

``settings`` is its config model; nothing is imported here (``tamesu.targets``)."""

__all__: list[str] = []
