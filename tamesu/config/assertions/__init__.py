"""The built-in assertion kinds, one module per family: each spec model, registered with
``assertion_kind`` naming its evaluator.

Every module of this package is imported when the assertion registry is first read
(``tamesu.config.kinds``); the ``Assertion`` item of a suite is built from it in
``tamesu.config.assertion``.
"""

__all__: list[str] = []
