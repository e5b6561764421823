"""The summary table as plain lines, laid out like rich's ``box.SIMPLE`` table without its edges.

Rich measured and rendered a table of 3,000 tests (a ``cases_file``) in 0.8 s of CPU, a third of
the whole run's; these lines cost a few milliseconds. Cells are measured in terminal cells (wide
characters count twice) and a row too wide for the terminal folds its widest columns, as rich's
``overflow="fold"`` did. Cells arrive already redacted and made printable.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len, chop_cells

__all__ = ["table_lines"]

_GAP = "   "
"""Between two columns: rich's padding on each side and the box's invisible divider."""


def table_lines(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, width: int, sgr: Sequence[str | None] = ()
) -> list[str]:
    """The header, a rule, then one or more lines per row, each at most ``width`` cells.

    ``sgr`` holds, per row, the ANSI colour of its first cell (None for none).
    """
    widths = [max([cell_len(h), *(cell_len(row[i]) for row in rows)]) for i, h in enumerate(headers)]
    _fit(widths, [cell_len(h) for h in headers], width - len(_GAP) * (len(headers) - 1))
    out = _lines(headers, widths, None)
    out.append("─" * (sum(widths) + len(_GAP) * (len(widths) - 1)))
    for index, row in enumerate(rows):
        out.extend(_lines(row, widths, sgr[index] if index < len(sgr) else None))
    return out


def _fit(widths: list[int], floors: list[int], room: int) -> None:
    """Narrow the widest columns, one cell at a time, until the row fits ``room`` (never below a
    column's header or one cell)."""
    while sum(widths) > room:
        widest = max(range(len(widths)), key=lambda i: widths[i])
        if widths[widest] <= max(1, min(floors[widest], 8)):
            return
        widths[widest] -= 1


def _lines(cells: Sequence[str], widths: list[int], sgr: str | None) -> list[str]:
    parts = [
        chop_cells(cell, width) if cell_len(cell) > width else [cell] for cell, width in zip(cells, widths)
    ]
    lines = []
    for n in range(max(len(p) for p in parts)):
        shown = []
        for column, (part, width) in enumerate(zip(parts, widths)):
            text = part[n] if n < len(part) else ""
            text += " " * (width - cell_len(text))
            if column == 0 and sgr:
                text = f"\x1b[{sgr}m{text}\x1b[0m"
            shown.append(text)
        lines.append(_GAP.join(shown))
    return lines
