"""What the API answers besides the read layer's own results (``explore.model``, ``explore.runs``), which it
returns as they are: the pages and the API render the same objects, so a field cannot mean one thing on a page
and another in JSON. Only the wrappers and the error bodies are declared here."""

from __future__ import annotations

from pydantic import BaseModel, Field

from rocketmq_retry.explore.model import GroupView


class GroupList(BaseModel):
    """Each consumer group's days ``date_from..date_to`` (the groups page without its what-ifs)."""

    date_from: str
    date_to: str
    days: int
    groups: list[GroupView]


class Problem(BaseModel):
    """A refused request: what was wrong, in one sentence (a bad date, an unknown message, no token)."""

    detail: str


class ParameterProblem(BaseModel):
    parameter: str = Field(description="where the bad value was: `query.page_size`, `path.date`")
    message: str


class BadParameters(BaseModel):
    """A parameter outside what the OpenAPI document allows (a page size of 5000, a sort direction of "up")."""

    detail: str
    errors: list[ParameterProblem]
