"""``python -m tamesu``: the same as the tamesu command."""

from __future__ import annotations

from tamesu.cli import console_main

raise SystemExit(console_main())
