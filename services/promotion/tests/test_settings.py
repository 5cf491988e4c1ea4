"""The promotion service refuses to start unless sweep_interval < sweep_window < session_ttl."""

import pytest
from pydantic import ValidationError

from cairn_promotion.settings import PromotionSettings
from cairn_scope import generate_signing_key

VERIFY_KEYS = generate_signing_key("gateway.test")[1]


class TestTtlWindowInvariant:
    def test_defaults_hold(self) -> None:
        PromotionSettings(scope_verify_keys=VERIFY_KEYS)

    @pytest.mark.parametrize(
        ("interval", "window", "ttl"),
        [(600, 600, 7200), (600, 300, 7200), (60, 7200, 7200), (60, 9000, 7200)],
    )
    def test_broken_invariant_refuses_to_start(self, interval: int, window: int, ttl: int) -> None:
        with pytest.raises(ValidationError, match="sweep_interval < sweep_window < session_ttl"):
            PromotionSettings(
                scope_verify_keys=VERIFY_KEYS,
                sweep_interval_seconds=interval,
                sweep_window_seconds=window,
                session_default_ttl_seconds=ttl,
            )

    def test_llm_compiler_needs_its_endpoint(self) -> None:
        with pytest.raises(ValidationError, match="compiler 'openai' needs"):
            PromotionSettings(scope_verify_keys=VERIFY_KEYS, compiler="openai")
