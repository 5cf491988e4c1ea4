"""Scope transport: any change to a signed scope is refused."""

import base64
import json

import pytest

from cairn_contracts.errors import InvalidScope
from cairn_contracts.identity import Role
from cairn_scope import SCOPE_HEADER, SIGNATURE_HEADER, Scope, sign_scope, verify_scope

SECRET = "a-test-secret-of-enough-length"
SCOPE = Scope(
    tenant_id="11111111-1111-1111-1111-111111111111",
    subject_id="agent-a",
    role=Role.agent,
    key_id="22222222-2222-2222-2222-222222222222",
)


def _tampered(headers: dict[str, str], **changes: object) -> dict[str, str]:
    payload = json.loads(base64.urlsafe_b64decode(headers[SCOPE_HEADER]))
    payload.update(changes)
    body = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    return {**headers, SCOPE_HEADER: base64.urlsafe_b64encode(body).decode()}


class TestSignScope:
    def test_round_trip(self) -> None:
        assert verify_scope(sign_scope(SCOPE, SECRET), SECRET) == SCOPE

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("tenant_id", "33333333-3333-3333-3333-333333333333"),
            ("subject_id", "agent-b"),
            ("role", "superadmin"),
            ("key_id", "44444444-4444-4444-4444-444444444444"),
            ("iat", 1),
        ],
    )
    def test_tampering_any_field_is_refused(self, field: str, value: object) -> None:
        with pytest.raises(InvalidScope):
            verify_scope(_tampered(sign_scope(SCOPE, SECRET), **{field: value}), SECRET)

    def test_wrong_secret_is_refused(self) -> None:
        with pytest.raises(InvalidScope):
            verify_scope(sign_scope(SCOPE, SECRET), "another-secret-entirely")

    @pytest.mark.parametrize("missing", [SCOPE_HEADER, SIGNATURE_HEADER])
    def test_missing_header_is_refused(self, missing: str) -> None:
        headers = sign_scope(SCOPE, SECRET)
        del headers[missing]
        with pytest.raises(InvalidScope):
            verify_scope(headers, SECRET)

    def test_no_headers_is_refused(self) -> None:
        with pytest.raises(InvalidScope):
            verify_scope(None, SECRET)

    def test_garbage_is_refused(self) -> None:
        with pytest.raises(InvalidScope):
            verify_scope({SCOPE_HEADER: "%%%", SIGNATURE_HEADER: "00"}, SECRET)

    def test_expired_scope_is_refused(self) -> None:
        headers = sign_scope(SCOPE, SECRET, now=1_000_000)
        with pytest.raises(InvalidScope):
            verify_scope(headers, SECRET, now=1_000_000 + 301)
        assert verify_scope(headers, SECRET, now=1_000_000 + 299) == SCOPE
