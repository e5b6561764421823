"""The ``sip`` target: a real phone call over SIP, placed by tamesu's own user agent or a LiveKit SIP trunk.

``settings`` is its config model; nothing is imported here (``tamesu.targets``)."""

__all__: list[str] = []
