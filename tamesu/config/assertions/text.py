"""Assertions on the agent's words: contains, not_contains, regex, not_regex."""

from tamesu.config.kinds import assertion_kind

__all__: list[str] = []


assertion_kind(
    "contains",
    spec=str,
    description="Some agent turn contains this text.",
    example="30 days",
    evaluator="tamesu.assertions.text:contains",
    summary="the agent transcript contains the text (case-insensitive, whitespace folded)",
)

assertion_kind(
    "not_contains",
    spec=str,
    description="Fails if any agent turn includes this text.",
    example="90 days",
    evaluator="tamesu.assertions.text:not_contains",
    summary="no agent turn contains the text (case-insensitive, whitespace folded)",
)

assertion_kind(
    "regex",
    spec=str,
    description="Some agent turn matches this regular expression.",
    example="(?i)30 days",
    evaluator="tamesu.assertions.text:regex",
    summary="Python `re.search` matches the agent transcript (`(?i)` for case)",
)

assertion_kind(
    "not_regex",
    spec=str,
    description="No agent turn matches this regular expression.",
    example=r"\b\d{16}\b",
    evaluator="tamesu.assertions.text:not_regex",
    summary="the pattern matches no agent turn",
)
