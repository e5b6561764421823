"""The README's tables of target types and assertion kinds, written from the registries.

A kind's one-line ``summary`` is registered with it, so the docs follow the registry as the
schema does: a test keeps the README's tables equal to these. Print them with
``python -m tamesu.config.tables``.
"""

from __future__ import annotations

from tamesu.config.kinds import assertion_kinds, target_kinds

__all__ = ["assertions_table", "targets_table"]

_NO_ADAPTER = " *(no adapter yet)*"
_NO_EVALUATOR = " *(no evaluator yet)*"


def targets_table(*, builtin: bool = True) -> str:
    """Markdown: each registered target type (tamesu's own unless ``builtin`` is False) and what it talks to."""
    rows = [
        f"| `{e.name}` | {e.summary}{'' if e.adapter is not None else _NO_ADAPTER} |"
        for e in target_kinds.entries(builtin=builtin)
    ]
    return "\n".join(["| type | What it talks to |", "|---|---|", *rows])


def assertions_table(*, builtin: bool = True) -> str:
    """Markdown: each registered assertion kind (tamesu's own unless ``builtin`` is False) and when it passes."""
    rows = [
        f"| `{e.name}` | {e.summary}{_NO_EVALUATOR if e.evaluator is None and not e.expands else ''} |"
        for e in assertion_kinds.entries(builtin=builtin)
    ]
    return "\n".join(["| Kind | Passes when |", "|---|---|", *rows])


if __name__ == "__main__":
    print(targets_table(), assertions_table(), sep="\n\n")
