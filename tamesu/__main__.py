"""``python -m tamesu``: the same as the tamesu command."""

from __future__ import annotations

from tamesu.cli import main

raise SystemExit(main())
