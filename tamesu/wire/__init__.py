"""The wire that target adapters and voice stages share: connect retries and ``session.open``,
the agent-fault counts, one websocket per session (``wslink``), a call's audio websocket
(``audio_socket``) and the local HTTP server agents call back (``http_listener``).

It knows no target type and no voice stage: what it needs of a run's target context is
``WireContext`` (``wire_context``)."""

__all__: list[str] = []
