"""Temporal's remote codec endpoint: operators' Temporal UI or CLI decrypt (and encrypt) Cairn payloads.

Session text sits encrypted in Temporal history; only a superadmin key may see it decrypted. Answers
follow Temporal's protocol (`{"payloads": [...]}`, no Cairn envelope) so the UI and `temporal --codec-endpoint`
understand them. `CAIRN_CODEC_CORS_ORIGINS` lets the Temporal UI's origin call it from the browser.
"""

import base64
from collections.abc import Awaitable, Callable, Sequence

from fastapi import APIRouter
from fastapi.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send
from temporalio.api.common.v1 import Payload

from cairn_contracts.codec import CodecPayload, CodecPayloads
from cairn_contracts.errors import ErrorEnvelope, PayloadUndecodable, ServiceUnavailable
from cairn_gateway.deps import StateDep, SuperadminDep
from cairn_servicekit.payload_codec import AesGcmCodec, PayloadKeyError

router = APIRouter(prefix="/codec", tags=["ops"])

RESPONSES: dict[int | str, dict[str, object]] = {
    401: {"model": ErrorEnvelope, "description": "unauthenticated"},
    403: {"model": ErrorEnvelope, "description": "forbidden: not a superadmin key"},
    422: {"model": ErrorEnvelope, "description": "validation_error, payload_undecodable"},
    503: {"model": ErrorEnvelope, "description": "service_unavailable: CAIRN_PAYLOAD_KEYS not set"},
}


def _to_proto(payload: CodecPayload) -> Payload:
    return Payload(
        metadata={k: base64.b64decode(v) for k, v in payload.metadata.items()},
        data=base64.b64decode(payload.data),
    )


def _from_proto(payload: Payload) -> CodecPayload:
    return CodecPayload(
        metadata={k: base64.b64encode(v).decode() for k, v in payload.metadata.items()},
        data=base64.b64encode(payload.data).decode(),
    )


async def _apply(
    codec: AesGcmCodec | None,
    body: CodecPayloads,
    op: Callable[[AesGcmCodec], Callable[[Sequence[Payload]], Awaitable[list[Payload]]]],
) -> CodecPayloads:
    if codec is None:
        raise ServiceUnavailable("this gateway holds no payload keys (CAIRN_PAYLOAD_KEYS)")
    try:
        done = await op(codec)([_to_proto(p) for p in body.payloads])
    except PayloadKeyError as exc:
        raise PayloadUndecodable(str(exc)) from None
    return CodecPayloads(payloads=[_from_proto(p) for p in done])


@router.post("/encode", response_model=CodecPayloads, responses=RESPONSES)
async def encode(body: CodecPayloads, state: StateDep, _: SuperadminDep) -> CodecPayloads:
    """Encrypt payloads with the current payload key (superadmin only)."""
    return await _apply(state.codec, body, lambda c: c.encode)


@router.post("/decode", response_model=CodecPayloads, responses=RESPONSES)
async def decode(body: CodecPayloads, state: StateDep, _: SuperadminDep) -> CodecPayloads:
    """Decrypt payloads that name a key this gateway holds; others pass through unchanged (superadmin only)."""
    return await _apply(state.codec, body, lambda c: c.decode)


class CodecCorsMiddleware:
    """CORS for the codec endpoint only: its one cross-origin caller is the Temporal UI, calling from the
    operator's browser with their bearer key. Every other request skips the header checks and the
    wrapped `send` (measured on the write path)."""

    def __init__(self, app: ASGIApp, allow_origins: Sequence[str]) -> None:
        self.app = app
        self.cors = CORSMiddleware(
            app,
            allow_origins=list(allow_origins),
            allow_methods=["POST"],
            allow_headers=["authorization", "content-type", "x-namespace"],
            allow_credentials=True,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(router.prefix):
            await self.cors(scope, receive, send)
        else:
            await self.app(scope, receive, send)
