"""The ``browser`` target: a chat widget in a web page, driven with Playwright (steps, goals, accessibility, visual checks).

``settings`` is its config model; nothing is imported here (``tamesu.targets``)."""

__all__: list[str] = []
