"""Assertions a model grades: judge, similar_to, grounded, evaluator."""

from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from tamesu.config.common import ConfigModel, F, Fraction, ShortForm, exactly_one, set_schema
from tamesu.config.kinds import assertion_kind

__all__ = ["Evaluator", "GroundedAssertion", "GroundedContext", "Judge", "Similar"]


class Judge(ShortForm):
    """A model grades the run against a rubric."""

    __short_field__: ClassVar[str] = "rubric"
    __short_schema__: ClassVar[dict[str, Any]] = {
        "type": "string",
        "description": "The rubric, graded pass/fail by the judge model.",
    }
    __object_schema__: ClassVar[dict[str, Any]] = {
        "if": set_schema("min"),
        "then": {"required": ["scale"], "properties": {"scale": {"const": "1-5"}}},
    }

    rubric: str = F(
        "What the judge checks, in plain words.", "The agent apologises before explaining the policy"
    )
    model: str | None = F(
        "Genkit model reference of the judge; models.judge when unset.",
        "anthropic/claude-sonnet-4-6",
        default=None,
    )
    scale: Literal["binary", "1-5"] = F(
        "Pass/fail, or a score from 1 to 5 compared with min.", "1-5", default="binary"
    )
    min: float | None = F("Lowest passing score on the 1-5 scale.", 4, default=None, ge=1, le=5)

    @model_validator(mode="after")
    def _min_needs_scale(self) -> "Judge":
        if self.min is not None and self.scale != "1-5":
            raise PydanticCustomError("judge_min", "min applies to scale: 1-5")
        return self


class Similar(ShortForm):
    """Some agent turn means the same as a text (embedding similarity)."""

    __short_field__: ClassVar[str] = "text"
    __short_schema__: ClassVar[dict[str, Any]] = {
        "type": "string",
        "description": "The meaning some agent turn must have (models.embedder, minimum 0.8).",
    }

    text: str = F("What some agent turn should mean.", "Returning after 40 days is not possible")
    min: Fraction = F("Lowest cosine similarity of the embeddings that passes.", 0.7, default=0.8)
    model: str | None = F(
        "Embedding model (Genkit reference); models.embedder when unset.",
        "googleai/text-embedding-004",
        default=None,
    )


class GroundedContext(ConfigModel):
    """Where the passages the agent's claims are checked against come from."""

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": [k]} for k in ("tool", "json_path", "text")]}
    )

    tool: str | None = F(
        "A tool whose results are the context (model, mcp, grpc, realtime, pipecat targets).",
        "search_docs",
        default=None,
    )
    json_path: str | None = F(
        "A JSONPath into every raw response that selects the passages (rest, websocket, realtime).",
        "$.sources[*].text",
        default=None,
    )
    text: list[str] | None = F(
        "The passages themselves.", ["Returns are accepted within 30 days of delivery."], default=None
    )

    @model_validator(mode="before")
    @classmethod
    def _one_source(cls, data: Any) -> Any:
        exactly_one(data, ("tool", "json_path", "text"), "context")
        return data


class GroundedAssertion(ConfigModel):
    """Every factual claim of the agent is backed by the retrieval context; a judge lists the claims."""

    context: GroundedContext = F("Where the retrieval context comes from.", {"tool": "search_docs"})
    min: Fraction | None = F(
        "Share of claims that must be supported; all of them when unset.", 0.9, default=None
    )
    model: str | None = F(
        "Judge model for this check; models.judge when unset.", "googleai/gemini-2.5-pro", default=None
    )


class Evaluator(ShortForm):
    """A registered Genkit evaluator scores the run."""

    __short_field__: ClassVar[str] = "name"
    __short_schema__: ClassVar[dict[str, Any]] = {
        "type": "string",
        "minLength": 1,
        "description": "The evaluator name.",
    }

    name: str = F("The evaluator's registered name.", "genkitEval/faithfulness", min_length=1)
    min: Fraction | None = F("Lowest passing score, from 0 to 1.", 0.8, default=None)


assertion_kind(
    "judge",
    spec=Judge,
    description="A model grades the run against a rubric (text, or rubric/model/scale/min).",
    example="The agent states the 30-day window and promises no exception",
    evaluator="tamesu.assertions.graded:judge",
    summary="a model grades the run against a rubric (binary, or `scale: 1-5` with `min`, default 4)",
)


assertion_kind(
    "similar_to",
    spec=Similar,
    description="An agent turn whose meaning is close to this text (embedding similarity reaching min).",
    example={"text": "Returning after 40 days is not possible", "min": 0.7},
    evaluator="tamesu.assertions.graded:similar_to",
    summary="some agent turn's embedding has cosine similarity ≥ `min` (default 0.8) with the text",
)


assertion_kind(
    "grounded",
    spec=GroundedAssertion,
    description="Every factual claim of the agent is backed by the retrieval context.",
    example={"context": {"tool": "search_docs"}, "min": 0.9},
    evaluator="tamesu.assertions.graded:grounded",
    summary="a judge lists the agent's factual claims and checks each against a context (a tool's results, a JSONPath into raw responses, or given text); the supported share ≥ `min` (default all)",
)


assertion_kind(
    "evaluator",
    spec=Evaluator,
    description="A registered Genkit evaluator scores the run (a name, or name/min).",
    example={"name": "genkitEval/faithfulness", "min": 0.8},
    evaluator="tamesu.assertions.evaluators:run_evaluator",
    summary='a registered evaluator scores ≥ `min` (default 0.8): `genkitEval/faithfulness`, `genkitEval/answer_relevancy`, `genkitEval/maliciousness`, or your own (`@tamesu.assertions.evaluators.evaluator("name")`)',
)
