"""tamesu's own SIP stack (RFC 3261 messages, digest auth, transactions, SDP, RTP) for ``sip`` targets.

A package like every other folder of tamesu, so a wheel carries it (tests/test_packaging.py keeps the
list in pyproject.toml complete).
"""

__all__: list[str] = []
