"""One module per target type: its config model, registered with ``@target_type`` naming its adapter.

Every module of this package is imported when the target registry is first read
(``tamesu.config.kinds``); ``base`` holds what the types share.
"""
