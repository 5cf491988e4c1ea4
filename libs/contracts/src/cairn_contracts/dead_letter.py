"""The JetStream dead-letter record (`cairn.v1.dead_letter.<consumer>`)."""

from enum import StrEnum
from typing import Literal

from pydantic import Base64Bytes, BaseModel, Field


class DeadLetterReason(StrEnum):
    max_deliveries = "max_deliveries"  # handling failed on every one of max_deliver attempts
    malformed = "malformed"  # the message does not parse: retrying cannot help


class DeadLetter(BaseModel):
    """A message a consumer gave up on, with enough to inspect or replay it (`data` is the original body)."""

    type: Literal["cairn.v1.dead_letter"] = "cairn.v1.dead_letter"
    consumer: str
    subject: str
    stream_sequence: int = Field(ge=0)
    deliveries: int = Field(ge=0)
    reason: DeadLetterReason
    error: str = Field(max_length=2000)
    data: Base64Bytes
