"""The runner: plan, attempt, grading, scheduler, placements and results (``api.run`` drives them).
Its modules are imported by name; ``tamesu.run`` is the public entry."""

__all__: list[str] = []
