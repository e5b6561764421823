"""The run graph (installed as ``tamesu.actors``): the actors of one run, wired and driven by
``graph``; the placements in ``tamesu.runner.placement`` move them between processes. Its modules
are imported by name; the package exports nothing."""

__all__: list[str] = []
