"""Promotion: compiler candidates and the Temporal workflow's input and result."""

from typing import Annotated

from pydantic import BaseModel, Field


class Candidate(BaseModel):
    """One durable fact a compiler extracted from a session window."""

    text: Annotated[str, Field(min_length=1, max_length=2000)]
    confidence: Annotated[float, Field(ge=0.0, le=1.0)]
    tags: list[str] = []
    cross_links: list[str] = []  # knowledge article ids; validated against visibility before any write


class Turn(BaseModel):
    """A session turn as a compiler sees it (content is data, never instructions)."""

    role: str
    content: str
