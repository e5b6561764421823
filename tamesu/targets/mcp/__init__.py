"""The ``mcp`` target: an MCP server's tools, called over stdio or HTTP.

``settings`` is its config model; nothing is imported here (``tamesu.targets``)."""

__all__: list[str] = []
