"""``tamesu run --grid KEY=V1,V2``: every audio test once per cell of a grid of persona and line settings.

The grid is expanded at plan time, after the suite's own expansion (cases, languages, repeats):
each run of an audio test becomes one run per cell, its persona changed as the cell says, its test
id suffixed with the cell (``returns {line_quality=pstn, background_noise=cafe@10}``) so each cell
is a test of its own with its repeats, pass rate and interval. Text tests are left as they are. The
cell travels in ``spec.grid`` to the run's result (``RunResult.grid``), which the reports
group by.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from tamesu.errors import UsageError

if TYPE_CHECKING:
    from tamesu.run_spec import RunSpec

__all__ = ["GRID_KEYS", "Grid", "cell_label", "cell_of", "cells", "expand_grid", "parse_grid"]

GRID_KEYS = ("line_quality", "background_noise", "voice", "language", "interrupt_probability")
_LINES = ("pstn", "mobile_poor", "voip_good", "none")

Grid = dict[str, list[str]]
"""Key -> its values, in the order given."""


def parse_grid(items: Iterable[str]) -> Grid:
    """``["line_quality=pstn,voip_good", "background_noise=none,cafe@10"]`` -> the grid; a usage
    error names the item that is wrong."""
    grid: Grid = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or key not in GRID_KEYS:
            raise UsageError(f"--grid {item!r}: KEY=V1,V2,... with KEY one of {', '.join(GRID_KEYS)}")
        if key in grid:
            raise UsageError(f"--grid {key} is given twice")
        vals = [v.strip() for v in values.split(",") if v.strip()]
        if not vals:
            raise UsageError(f"--grid {key}: no values")
        for v in vals:
            _check(key, v)
        grid[key] = list(dict.fromkeys(vals))
    return grid


def _check(key: str, value: str) -> None:
    if key == "line_quality" and value not in _LINES:
        raise UsageError(f"--grid line_quality={value}: one of {', '.join(_LINES)}")
    if key == "interrupt_probability":
        try:
            ok = 0.0 <= float(value) <= 1.0
        except ValueError:
            ok = False
        if not ok:
            raise UsageError(f"--grid interrupt_probability={value}: a number from 0 to 1")
    if key == "background_noise" and "@" in value:
        try:
            float(value.rpartition("@")[2])
        except ValueError:
            raise UsageError(f"--grid background_noise={value}: NOISE@SNR_DB, like cafe@10") from None


def cells(grid: Grid) -> list[dict[str, str]]:
    """Every combination, the first key varying slowest."""
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def cell_label(cell: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in cell.items()) + "}"


_LABEL = re.compile(r" \{(?P<cell>[a-z_]+=[^{}]*)\}(?=#\d+$|$)")


def cell_of(test_id: str) -> dict[str, str] | None:
    """The cell a grid run's test id ends with (``cell_label``); None for a test outside a grid."""
    m = _LABEL.search(test_id)
    if m is None:
        return None
    pairs = [p.partition("=") for p in m["cell"].split(", ")]
    if any(not sep or k not in GRID_KEYS for k, sep, _ in pairs):
        return None
    return {k: v for k, _, v in pairs}


def expand_grid(specs: Sequence[RunSpec], grid: Grid) -> list[RunSpec]:
    """Each audio run once per cell (its repeats kept together per cell); other runs unchanged."""
    if not grid:
        return list(specs)
    out: list[RunSpec] = []
    pending: list[RunSpec] = []

    def flush() -> None:
        for cell in cells(grid):
            out.extend(_in_cell(spec, cell) for spec in pending)
        pending.clear()

    for spec in specs:
        if not _may_carry_audio(spec):
            flush()
            out.append(spec)
            continue
        if pending and pending[0].test_id != spec.test_id:
            flush()
        pending.append(spec)
    flush()
    return out


def _in_cell(spec: RunSpec, cell: dict[str, str]) -> RunSpec:
    label = cell_label(cell)
    test = spec.test
    persona = test.persona
    persona_data: dict[str, Any] = persona.model_dump(exclude_unset=True, by_alias=True) if persona else {}
    behaviors = dict(persona_data.get("behaviors") or {})
    language = spec.language
    for key, value in cell.items():
        if key == "voice":
            persona_data["voice"] = value
        elif key == "language":
            persona_data["language"] = language = value
        elif key == "line_quality":
            behaviors["line_quality"] = None if value == "none" else value
        elif key == "interrupt_probability":
            behaviors["interrupt_probability"] = float(value)
        elif key == "background_noise":
            noise, _, snr = value.partition("@")
            behaviors["background_noise"] = None if noise == "none" else noise
            if snr:
                behaviors["background_noise_snr_db"] = float(snr)
    persona_data["behaviors"] = behaviors
    from tamesu.config import Persona

    new_test = test.model_copy(update={"persona": Persona.model_validate(persona_data)})
    suffix = spec.run_id[len(spec.test_id) :]
    test_id = f"{spec.test_id} {label}"
    return spec.evolve(
        test=new_test,
        test_id=test_id,
        run_id=test_id + suffix,
        language=language,
        grid=dict(cell),
    )


def _may_carry_audio(spec: RunSpec) -> bool:
    """Whether the run's target type can carry audio at all (its kind's ``audio`` is not ``never``):
    the runner asks the registry, and names no target type."""
    from tamesu.config.kinds import target_kinds

    kind = str(getattr(spec.target, "type", ""))
    return kind in target_kinds and target_kinds.get(kind).audio != "never"
