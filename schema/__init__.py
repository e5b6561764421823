"""The schema files, installed with tamesu as ``tamesu.schema`` so an installed tamesu carries them.

``tamesu.schema.json`` and ``tamesu-project.schema.json`` are what ``tamesu schema`` prints (editors
point at them); ``agent.proto`` is the service a ``grpc`` target's agent serves.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FOLDER"]

FOLDER = Path(__file__).resolve().parent
"""Where the schema files are, in a checkout or an installed tamesu."""
