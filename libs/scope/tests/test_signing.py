"""Scope tokens: bound to one subject and body, used once, short-lived, minted only by private keys."""

import base64
import json

import pytest

from cairn_contracts import subjects
from cairn_contracts.errors import InvalidScope
from cairn_contracts.identity import Role
from cairn_scope import (
    SCOPE_HEADER,
    SIGNATURE_HEADER,
    Scope,
    ScopeSigner,
    ScopeVerifier,
    generate_signing_key,
)
from cairn_scope.replay import ReplayCache
from cairn_scope.signing import MAX_CLOCK_SKEW_SECONDS

GATEWAY_PRIVATE, GATEWAY_PUBLIC = generate_signing_key("gateway.k1")
PROMOTION_PRIVATE, PROMOTION_PUBLIC = generate_signing_key("promotion.k1")
VERIFY_KEYS = f"{GATEWAY_PUBLIC},{PROMOTION_PUBLIC}"
SUBJECT = subjects.MEMORY_REMEMBER
BODY = b'{"content":"the user likes tea"}'
NOW = 1_800_000_000.0
SCOPE = Scope(
    tenant_id="11111111-1111-1111-1111-111111111111",
    subject_id="agent-a",
    role=Role.agent,
    key_id="22222222-2222-2222-2222-222222222222",
)


def gateway() -> ScopeSigner:
    return ScopeSigner.from_setting(GATEWAY_PRIVATE)


def verifier(max_age: float = 30.0) -> ScopeVerifier:
    return ScopeVerifier.from_setting(VERIFY_KEYS, max_age)


def _claims(headers: dict[str, str]) -> dict[str, object]:
    claims: dict[str, object] = json.loads(base64.urlsafe_b64decode(headers[SCOPE_HEADER]))
    return claims


def _with_claims(headers: dict[str, str], claims: dict[str, object]) -> dict[str, str]:
    token = json.dumps(claims, sort_keys=True, separators=(",", ":")).encode()
    return {**headers, SCOPE_HEADER: base64.urlsafe_b64encode(token).decode()}


class TestRoundTrip:
    def test_verifies_for_its_subject_and_body(self) -> None:
        headers = gateway().sign(SCOPE, SUBJECT, BODY, now=NOW)
        assert verifier().verify(headers, SUBJECT, BODY, now=NOW) == SCOPE

    def test_every_token_has_its_own_id(self) -> None:
        first, second = (gateway().sign(SCOPE, SUBJECT, BODY, now=NOW) for _ in range(2))
        assert _claims(first)["jti"] != _claims(second)["jti"]
        check = verifier()
        assert check.verify(first, SUBJECT, BODY, now=NOW) == check.verify(second, SUBJECT, BODY, now=NOW)


class TestBinding:
    def test_another_subject_is_refused(self) -> None:
        headers = gateway().sign(SCOPE, SUBJECT, BODY, now=NOW)
        with pytest.raises(InvalidScope, match="another message"):
            verifier().verify(headers, subjects.MEMORY_FORGET, BODY, now=NOW)

    def test_another_body_is_refused(self) -> None:
        headers = gateway().sign(SCOPE, SUBJECT, BODY, now=NOW)
        with pytest.raises(InvalidScope, match="another message"):
            verifier().verify(headers, SUBJECT, BODY + b" ", now=NOW)

    def test_replay_is_refused(self) -> None:
        check = verifier()
        headers = gateway().sign(SCOPE, SUBJECT, BODY, now=NOW)
        check.verify(headers, SUBJECT, BODY, now=NOW)
        with pytest.raises(InvalidScope, match="already used"):
            check.verify(headers, SUBJECT, BODY, now=NOW + 1)


class TestTampering:
    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("scope.tenant_id", "33333333-3333-3333-3333-333333333333"),
            ("scope.subject_id", "agent-b"),
            ("scope.role", "superadmin"),
            ("scope.key_id", "44444444-4444-4444-4444-444444444444"),
            ("sub", subjects.MEMORY_FORGET),
            ("bh", "x" * 43),
            ("jti", "another-id"),
            ("iat", int(NOW * 1000) + 1),
            ("kid", "promotion.k1"),
        ],
    )
    def test_changing_any_field_is_refused(self, field: str, value: object) -> None:
        headers = gateway().sign(SCOPE, SUBJECT, BODY, now=NOW)
        claims = _claims(headers)
        if field.startswith("scope."):
            scope = dict(claims["scope"])  # type: ignore[call-overload]
            scope[field.removeprefix("scope.")] = value
            claims["scope"] = scope
        else:
            claims[field] = value
        with pytest.raises(InvalidScope):
            verifier().verify(_with_claims(headers, claims), SUBJECT, BODY, now=NOW)

    def test_changed_signature_is_refused(self) -> None:
        headers = gateway().sign(SCOPE, SUBJECT, BODY, now=NOW)
        signature = bytearray(base64.urlsafe_b64decode(headers[SIGNATURE_HEADER]))
        signature[0] ^= 1
        tampered = {**headers, SIGNATURE_HEADER: base64.urlsafe_b64encode(bytes(signature)).decode()}
        with pytest.raises(InvalidScope, match="does not verify"):
            verifier().verify(tampered, SUBJECT, BODY, now=NOW)

    @pytest.mark.parametrize("missing", [SCOPE_HEADER, SIGNATURE_HEADER])
    def test_missing_header_is_refused(self, missing: str) -> None:
        headers = gateway().sign(SCOPE, SUBJECT, BODY, now=NOW)
        del headers[missing]
        with pytest.raises(InvalidScope, match="no scope"):
            verifier().verify(headers, SUBJECT, BODY, now=NOW)

    @pytest.mark.parametrize(
        "headers",
        [
            None,
            {},
            {SCOPE_HEADER: "%%%", SIGNATURE_HEADER: "00"},
            {SCOPE_HEADER: "e30=", SIGNATURE_HEADER: ""},
        ],
    )
    def test_garbage_is_refused(self, headers: dict[str, str] | None) -> None:
        with pytest.raises(InvalidScope):
            verifier().verify(headers, SUBJECT, BODY, now=NOW)


class TestExpiry:
    def test_valid_at_the_edge_of_the_window(self) -> None:
        headers = gateway().sign(SCOPE, SUBJECT, BODY, now=NOW)
        assert verifier(30).verify(headers, SUBJECT, BODY, now=NOW + 30) == SCOPE

    def test_refused_just_past_the_window(self) -> None:
        headers = gateway().sign(SCOPE, SUBJECT, BODY, now=NOW)
        with pytest.raises(InvalidScope, match="expired"):
            verifier(30).verify(headers, SUBJECT, BODY, now=NOW + 30.002)

    def test_future_token_within_clock_skew_is_valid(self) -> None:
        headers = gateway().sign(SCOPE, SUBJECT, BODY, now=NOW + MAX_CLOCK_SKEW_SECONDS)
        assert verifier().verify(headers, SUBJECT, BODY, now=NOW) == SCOPE

    def test_future_token_past_clock_skew_is_refused(self) -> None:
        headers = gateway().sign(SCOPE, SUBJECT, BODY, now=NOW + MAX_CLOCK_SKEW_SECONDS + 0.002)
        with pytest.raises(InvalidScope, match="expired"):
            verifier().verify(headers, SUBJECT, BODY, now=NOW)


class TestAuthority:
    def test_unknown_key_is_refused(self) -> None:
        stranger = ScopeSigner.from_setting(generate_signing_key("gateway.k1")[0])
        with pytest.raises(InvalidScope, match="does not verify"):
            verifier().verify(stranger.sign(SCOPE, SUBJECT, BODY, now=NOW), SUBJECT, BODY, now=NOW)

    def test_key_id_not_in_the_verify_keys_is_refused(self) -> None:
        stranger = ScopeSigner.from_setting(generate_signing_key("gateway.k2")[0])
        with pytest.raises(InvalidScope, match="unknown key"):
            verifier().verify(stranger.sign(SCOPE, SUBJECT, BODY, now=NOW), SUBJECT, BODY, now=NOW)

    def test_a_public_key_used_as_a_private_seed_mints_nothing(self) -> None:
        forged = ScopeSigner.from_setting(GATEWAY_PUBLIC)  # all a verify-only service holds
        with pytest.raises(InvalidScope, match="does not verify"):
            verifier().verify(forged.sign(SCOPE, SUBJECT, BODY, now=NOW), SUBJECT, BODY, now=NOW)

    def test_worker_key_signs_only_the_subjects_it_calls(self) -> None:
        promotion = ScopeSigner.from_setting(PROMOTION_PRIVATE)
        ok = promotion.sign(SCOPE, subjects.MEMORY_PERSIST_PROMOTED, BODY, now=NOW)
        assert verifier().verify(ok, subjects.MEMORY_PERSIST_PROMOTED, BODY, now=NOW) == SCOPE
        with pytest.raises(InvalidScope, match="may not sign"):
            verifier().verify(promotion.sign(SCOPE, SUBJECT, BODY, now=NOW), SUBJECT, BODY, now=NOW)

    def test_worker_key_cannot_sign_superadmin(self) -> None:
        promotion = ScopeSigner.from_setting(PROMOTION_PRIVATE)
        admin = SCOPE.model_copy(update={"role": Role.superadmin})
        headers = promotion.sign(admin, subjects.MEMORY_PERSIST_PROMOTED, BODY, now=NOW)
        with pytest.raises(InvalidScope, match="may not sign"):
            verifier().verify(headers, subjects.MEMORY_PERSIST_PROMOTED, BODY, now=NOW)

    def test_rotation_old_and_new_keys_both_verify(self) -> None:
        new_private, new_public = generate_signing_key("gateway.k2")
        both = ScopeVerifier.from_setting(f"{new_public},{VERIFY_KEYS}")
        for signer in (gateway(), ScopeSigner.from_setting(new_private)):
            assert both.verify(signer.sign(SCOPE, SUBJECT, BODY, now=NOW), SUBJECT, BODY, now=NOW) == SCOPE


class TestSettings:
    @pytest.mark.parametrize(
        "text",
        [
            "",
            "no-equals-sign",
            "=abc",
            "gateway.k1=!!!",
            "nobody.k1=" + "A" * 43,
            f"{GATEWAY_PRIVATE},{GATEWAY_PRIVATE}",
        ],
    )
    def test_malformed_signing_key_is_rejected(self, text: str) -> None:
        with pytest.raises(ValueError, match="CAIRN_SCOPE_SIGNING_KEY"):
            ScopeSigner.from_setting(text)

    @pytest.mark.parametrize("text", ["", "gateway.k1=AAAA", f"{GATEWAY_PUBLIC},{GATEWAY_PUBLIC}"])
    def test_malformed_verify_keys_are_rejected(self, text: str) -> None:
        with pytest.raises(ValueError, match="CAIRN_SCOPE_VERIFY_KEYS"):
            ScopeVerifier.from_setting(text)


class TestReplayCache:
    def test_forgets_ids_after_the_ttl(self) -> None:
        cache = ReplayCache(ttl_seconds=10)
        assert cache.first_sighting("a", now=0)
        assert not cache.first_sighting("a", now=9.9)
        assert cache.first_sighting("b", now=10.5)
        assert len(cache) == 1  # "a" expired and was dropped
        assert cache.first_sighting("a", now=10.5)
