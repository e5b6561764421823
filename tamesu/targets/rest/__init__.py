"""The ``rest`` target: an agent behind an HTTP API (request/response, streaming, polling, listening, websockets).

``settings`` is its config model; nothing is imported here (``tamesu.targets``)."""

__all__: list[str] = []
