"""Scope transport: the gateway signs the scope into NATS headers, services verify it.

The signature is HMAC-SHA256 over the canonical JSON of the scope plus an issue time, so a service
refuses a scope that is missing, altered in any field, or replayed long after it was issued.
"""

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Mapping

from pydantic import ValidationError

from cairn_contracts.errors import InvalidScope
from cairn_scope.model import Scope

SCOPE_HEADER = "Cairn-Scope"
SIGNATURE_HEADER = "Cairn-Scope-Signature"
MAX_AGE_SECONDS = 300


def _canonical(payload: Mapping[str, object]) -> bytes:
    return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()


def _mac(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def sign_scope(scope: Scope, secret: str, *, now: float | None = None) -> dict[str, str]:
    """Return the headers that carry `scope`, signed with the shared secret."""
    payload = {**scope.model_dump(mode="json"), "iat": int(now if now is not None else time.time())}
    body = _canonical(payload)
    return {
        SCOPE_HEADER: base64.urlsafe_b64encode(body).decode(),
        SIGNATURE_HEADER: _mac(secret, body),
    }


def verify_scope(headers: Mapping[str, str] | None, secret: str, *, now: float | None = None) -> Scope:
    """Verify the signed scope headers and return the Scope.

    Raises:
        InvalidScope: missing headers, bad encoding, a signature that does not verify, or an expired scope.
    """
    if not headers or SCOPE_HEADER not in headers or SIGNATURE_HEADER not in headers:
        raise InvalidScope("request carries no scope")
    try:
        body = base64.urlsafe_b64decode(headers[SCOPE_HEADER].encode())
    except (ValueError, TypeError):
        raise InvalidScope("scope header is not valid base64") from None
    if not hmac.compare_digest(_mac(secret, body), headers[SIGNATURE_HEADER]):
        raise InvalidScope("scope signature does not verify")
    try:
        payload = json.loads(body)
        issued_at = int(payload.pop("iat"))
        scope = Scope.model_validate(payload)
    except (ValueError, KeyError, TypeError, ValidationError):
        raise InvalidScope("scope payload is malformed") from None
    current = now if now is not None else time.time()
    if abs(current - issued_at) > MAX_AGE_SECONDS:
        raise InvalidScope("scope has expired")
    return scope
