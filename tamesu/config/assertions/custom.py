"""The custom assertion (a function registered in code by name) and pack (a named set of assertions)."""

from tamesu.config.kinds import assertion_kind

__all__ = ["BUILTIN_PACKS"]

BUILTIN_PACKS = (
    "prompt_injection",
    "pii_leakage",
    "system_prompt_leakage",
    "stays_in_scope",
    "discloses_ai",
    "harmful_content",
    "excessive_agency",
    "policy_consistency",
)
"""Red-team assertion packs that ship with tamesu; a suite's packs entry of the same name replaces one."""


assertion_kind(
    "custom",
    spec=str,
    description="An assertion registered in code, by name.",
    example="no_competitor_names",
    evaluator="tamesu.assertions.custom:custom",
    summary="a Python assertion registered by name",
)


assertion_kind(
    "pack",
    spec=str,
    description="A named set of assertions, built in or from the suite's packs; it is expanded when the suite loads.",
    example="pii_leakage",
    summary="expands into a pack's assertions when the suite loads",
    expands=True,
)
