"""Fixtures of the voice tests: the loopback agent on a free port and targets built around it."""

from __future__ import annotations

from .peers import Calls, calls, register_engines

__all__ = ["Calls", "calls"]

register_engines()
