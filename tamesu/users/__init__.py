"""The simulated users: who speaks for the user in a test (a script, a model with a goal, a
counterpart agent, a recorded call), behind one protocol, ``UserSimulator``."""

__all__: list[str] = []
