"""Scope transport: a caller signs the scope into the NATS headers of one message, services verify it.

A token is Ed25519 over the canonical JSON of the scope, the NATS subject, a SHA-256 of the body, a
random id and the issue time (ms). A service refuses a token that is missing, altered, signed by a key it
does not know, signed by a principal that may not call that subject (`cairn_contracts.bus`), older than
the validity window, or already seen (the replay cache). Services hold only public keys, so a service that
verifies cannot mint; the key id (`<principal>.<label>`) selects the verify key, so keys rotate by adding
the new public key everywhere, then switching the signer, then dropping the old one.
"""

import base64
import binascii
import hashlib
import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import ValidationError

from cairn_contracts.bus import PRINCIPALS, signer_of
from cairn_contracts.errors import InvalidScope
from cairn_scope.model import Scope
from cairn_scope.replay import ReplayCache

SCOPE_HEADER = "Cairn-Scope"
SIGNATURE_HEADER = "Cairn-Scope-Signature"
DEFAULT_MAX_AGE_SECONDS = 30.0
# A token issued this far in the future still counts (clock skew between hosts).
MAX_CLOCK_SKEW_SECONDS = 5.0


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text.encode())


def body_hash(body: bytes) -> str:
    return _b64(hashlib.sha256(body).digest())


def _canonical(payload: Mapping[str, object]) -> bytes:
    return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()


def parse_keyring(text: str, setting: str) -> dict[str, bytes]:
    """`kid=base64url,kid=base64url` (a comma-separated list, the first entry first) to {kid: raw key}.

    Raises:
        ValueError: an entry without `=`, an empty id, a duplicate id or a value that is not base64.
    """
    keys: dict[str, bytes] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        kid, sep, value = entry.partition("=")
        kid = kid.strip()
        if not sep or not kid or kid in keys:
            raise ValueError(f"{setting}: each entry is <key id>=<base64 key>, ids unique")
        try:
            keys[kid] = base64.urlsafe_b64decode(value.strip() + "=" * (-len(value.strip()) % 4))
        except (binascii.Error, ValueError):
            raise ValueError(f"{setting}: key {kid!r} is not base64") from None
    return keys


@dataclass(frozen=True)
class ScopeSigner:
    """A principal's private key. Only the gateway and the processes that call services hold one."""

    key_id: str
    private_key: Ed25519PrivateKey

    @classmethod
    def from_setting(cls, text: str) -> "ScopeSigner":
        """From `CAIRN_SCOPE_SIGNING_KEY` = `<principal>.<label>=<base64url 32-byte Ed25519 seed>`."""
        keys = parse_keyring(text, "CAIRN_SCOPE_SIGNING_KEY")
        if len(keys) != 1:
            raise ValueError("CAIRN_SCOPE_SIGNING_KEY holds exactly one key")
        ((kid, seed),) = keys.items()
        if signer_of(kid) not in PRINCIPALS or len(seed) != 32:
            raise ValueError("CAIRN_SCOPE_SIGNING_KEY: id must name a principal, key must be 32 bytes")
        return cls(kid, Ed25519PrivateKey.from_private_bytes(seed))

    def sign(self, scope: Scope, subject: str, body: bytes, *, now: float | None = None) -> dict[str, str]:
        """The headers that carry `scope` for exactly this subject and body, once."""
        issued_ms = int((now if now is not None else time.time()) * 1000)
        token = _canonical(
            {
                "scope": scope.model_dump(mode="json"),
                "sub": subject,
                "bh": body_hash(body),
                "jti": secrets.token_urlsafe(16),
                "iat": issued_ms,
                "kid": self.key_id,
            }
        )
        return {SCOPE_HEADER: _b64(token), SIGNATURE_HEADER: _b64(self.private_key.sign(token))}


def generate_signing_key(key_id: str) -> tuple[str, str]:
    """A fresh key pair as the two settings' entries: (`kid=private seed`, `kid=public key`)."""
    private = Ed25519PrivateKey.generate()
    seed = private.private_bytes_raw()
    return f"{key_id}={_b64(seed)}", f"{key_id}={_b64(private.public_key().public_bytes_raw())}"


class ScopeVerifier:
    """Checks tokens against the known public keys, the principals' authority and the replay cache.

    One per service replica: the replay cache is in memory, so a token replayed to *another* replica
    within the validity window is not caught here. NATS permissions are what keep tokens from being
    captured at all (only the service's own user may subscribe to its subjects).
    """

    def __init__(
        self, verify_keys: Mapping[str, Ed25519PublicKey], max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS
    ) -> None:
        self._keys = dict(verify_keys)
        self.max_age_seconds = max_age_seconds
        self.replays = ReplayCache(max_age_seconds + MAX_CLOCK_SKEW_SECONDS)

    @classmethod
    def from_setting(cls, text: str, max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS) -> "ScopeVerifier":
        """From `CAIRN_SCOPE_VERIFY_KEYS` = `<kid>=<base64url public key>,...` (every signer's, old and new)."""
        keys = parse_keyring(text, "CAIRN_SCOPE_VERIFY_KEYS")
        if not keys:
            raise ValueError("CAIRN_SCOPE_VERIFY_KEYS names no key")
        try:
            return cls(
                {kid: Ed25519PublicKey.from_public_bytes(raw) for kid, raw in keys.items()}, max_age_seconds
            )
        except ValueError:
            raise ValueError(
                "CAIRN_SCOPE_VERIFY_KEYS: every key must be a 32-byte Ed25519 public key"
            ) from None

    def verify(
        self, headers: Mapping[str, str] | None, subject: str, body: bytes, *, now: float | None = None
    ) -> Scope:
        """The Scope a message carries, if its token is valid for this subject and body and unseen.

        Raises:
            InvalidScope: missing or malformed headers, unknown key, bad signature, another subject or
                body, a principal that may not sign for this subject, expired or replayed.
        """
        if not headers or SCOPE_HEADER not in headers or SIGNATURE_HEADER not in headers:
            raise InvalidScope("request carries no scope")
        try:
            token = _unb64(headers[SCOPE_HEADER])
            signature = _unb64(headers[SIGNATURE_HEADER])
            claims = json.loads(token)
            key_id = str(claims["kid"])
        except (ValueError, TypeError, KeyError):
            raise InvalidScope("scope header is malformed") from None
        key = self._keys.get(key_id)
        if key is None:
            raise InvalidScope("scope is signed by an unknown key")
        try:
            key.verify(signature, token)
        except InvalidSignature:
            raise InvalidScope("scope signature does not verify") from None
        try:
            scope = Scope.model_validate(claims["scope"])
            token_id, issued_ms = str(claims["jti"]), int(claims["iat"])
            bound_subject, bound_body = str(claims["sub"]), str(claims["bh"])
        except (ValueError, KeyError, TypeError, ValidationError):
            raise InvalidScope("scope payload is malformed") from None
        if bound_subject != subject or bound_body != body_hash(body):
            raise InvalidScope("scope was signed for another message")
        principal = PRINCIPALS.get(signer_of(key_id))
        if principal is None or not principal.may_sign(subject, scope.is_superadmin):
            raise InvalidScope(f"{signer_of(key_id)} may not sign this scope for {subject}")
        current = now if now is not None else time.time()
        age = current - issued_ms / 1000
        if age > self.max_age_seconds or age < -MAX_CLOCK_SKEW_SECONDS:
            raise InvalidScope("scope has expired")
        if not self.replays.first_sighting(token_id, now=current):
            raise InvalidScope("scope was already used")
        return scope
