"""The golden assertion: the agent's turns against reference turns."""

from typing import Any, Literal

from pydantic import ConfigDict, model_validator

from tamesu.config.common import ConfigModel, F, Fraction, exactly_one
from tamesu.config.kinds import assertion_kind

__all__ = ["GoldenAssertion"]


class GoldenAssertion(ConfigModel):
    """The agent's turns compared with reference turns."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [{"required": ["file"]}, {"required": ["turns"]}]})

    file: str | None = F(
        "A JSON file next to the suite: a list of agent turns or a transcript.json (tamesu run --update-golden writes it).",
        "golden/refund.json",
        default=None,
    )
    turns: list[str] | None = F(
        "Reference turns written inline, instead of a file.",
        ["Our return window is 30 days.", "You're welcome!"],
        default=None,
    )
    mode: Literal["exact", "similar", "judge"] = F(
        "exact: same normalised text; similar: word overlap of at least min; judge: a model decides if each turn means the same.",
        "similar",
        default="similar",
    )
    min: Fraction = F("similar: the lowest word overlap that passes.", 0.8, default=0.8)

    @model_validator(mode="before")
    @classmethod
    def _one_source(cls, data: Any) -> Any:
        exactly_one(data, ("file", "turns"), "golden", allowed=("mode", "min"))
        return data


assertion_kind(
    "golden",
    spec=GoldenAssertion,
    description="The agent's turns against reference turns from a file or inline (exact, similar or judge).",
    example={"file": "golden/refund.json", "mode": "similar", "min": 0.8},
    evaluator="tamesu.assertions.golden:golden",
    summary="the agent's turns match reference turns (a file or inline): `exact`, `similar` (word overlap per turn ≥ `min`, default 0.8), or `judge`",
)
