"""Temporal's remote codec protocol (`POST /codec/encode|decode`): Payloads in protobuf JSON form."""

import base64
import binascii

from pydantic import BaseModel, Field, field_validator

MAX_CODEC_PAYLOADS = 1000  # one UI page of history events holds far fewer


def _is_base64(value: str) -> str:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("must be standard base64") from None
    return value


class CodecPayload(BaseModel):
    """One `temporal.api.common.v1.Payload`: metadata values and data are base64 (standard alphabet)."""

    metadata: dict[str, str] = Field(default_factory=dict)
    data: str = ""

    @field_validator("data")
    @classmethod
    def _data_is_base64(cls, value: str) -> str:
        return _is_base64(value)

    @field_validator("metadata")
    @classmethod
    def _metadata_is_base64(cls, value: dict[str, str]) -> dict[str, str]:
        for item in value.values():
            _is_base64(item)
        return value


class CodecPayloads(BaseModel):
    payloads: list[CodecPayload] = Field(default_factory=list, max_length=MAX_CODEC_PAYLOADS)
