"""Calling a service over NATS with the caller's signed scope."""

from typing import Any

from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from pydantic import BaseModel
from pydantic_core import from_json, to_json

from cairn_contracts import subjects
from cairn_contracts.envelope import Reply
from cairn_contracts.errors import ErrorBody, RemoteError, ServiceUnavailable, UpstreamTimeout
from cairn_contracts.health import HealthReply
from cairn_observability.propagation import traced_request
from cairn_scope import Scope, ScopeSigner


class ServiceClient:
    """Request/reply to Cairn services; errors come back as the service's own typed error."""

    def __init__(self, nc: NATS, signer: ScopeSigner, timeout: float = 10.0) -> None:
        self._nc = nc
        self._signer = signer
        self._timeout = timeout

    async def request(
        self,
        subject: str,
        scope: Scope,
        body: BaseModel,
        *,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """Send `body` under `scope`; raise RemoteError for an error reply, 503/504 if nobody answers."""
        reply = Reply.model_validate_json(await self._ask(subject, scope, body, timeout, headers))
        if reply.error is not None:
            raise RemoteError(reply.error)
        return reply

    async def request_envelope(
        self,
        subject: str,
        scope: Scope,
        body: BaseModel,
        *,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
        data_only: bool = False,
    ) -> bytes:
        """`request`, answered as the REST success body (`{"data", "meta"}`, JSON) for a route to send on
        as it is: the service built it from the contract models, so it is not validated and encoded again.
        With `data_only` the reply's `data` is the whole body (a response that carries its own envelopes)."""
        reply = from_json(await self._ask(subject, scope, body, timeout, headers))
        if reply.get("error") is not None:
            raise RemoteError(ErrorBody.model_validate(reply["error"]))
        if data_only:
            return to_json(reply.get("data"))
        return to_json({"data": reply.get("data"), "meta": reply.get("meta") or {}})

    async def _ask(
        self,
        subject: str,
        scope: Scope,
        body: BaseModel,
        timeout: float | None,
        headers: dict[str, str] | None,
    ) -> bytes:
        payload = body.model_dump_json().encode()
        # One token per message: bound to this subject and body, so it cannot be replayed elsewhere.
        headers = {**(headers or {}), **self._signer.sign(scope, subject, payload)}
        try:
            msg = await traced_request(self._nc, subject, payload, timeout or self._timeout, headers, scope)
        except NoRespondersError:
            raise ServiceUnavailable(f"no service answers {subject}") from None
        except NatsTimeout:
            raise UpstreamTimeout(f"{subject} did not answer in time") from None
        data: bytes = msg.data
        return data

    async def data(self, subject: str, scope: Scope, body: BaseModel) -> Any:
        return (await self.request(subject, scope, body)).data

    async def health(self, service: str, timeout: float = 1.0) -> HealthReply:
        msg = await self._nc.request(subjects.health(service), b"", timeout=timeout)
        return HealthReply.model_validate_json(msg.data)
