"""What reads a run: the console, ``show``, JSON, JUnit, SARIF, the HTML page and the load report,
and the runner's publishers (``publish``). Its modules are imported by name."""

__all__: list[str] = []
