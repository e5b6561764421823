"""The ``model`` target: a prompt under test, sent straight to a model provider.

``settings`` is its config model; nothing is imported here (``tamesu.targets``)."""

__all__: list[str] = []
