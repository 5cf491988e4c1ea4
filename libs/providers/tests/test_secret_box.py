"""Provider-key encryption and its rotation: the first key encrypts, every listed key decrypts."""

import pytest

from cairn_providers.secrets import SecretBox, secret_box


def test_a_token_round_trips_and_another_key_cannot_read_it() -> None:
    token = SecretBox("old-secret-0123456789").encrypt("sk-tenant")
    assert SecretBox("old-secret-0123456789").decrypt(token) == "sk-tenant"
    assert SecretBox("new-secret-0123456789").decrypt(token) is None


def test_rotation_new_key_first_reads_old_tokens_and_writes_new_ones() -> None:
    old_token = SecretBox("old-secret-0123456789").encrypt("sk-old")
    rotating = SecretBox("new-secret-0123456789,old-secret-0123456789")
    assert rotating.decrypt(old_token) == "sk-old"
    new_token = rotating.encrypt("sk-new")
    # Written under the new key: readable once the old one is dropped, not by the old key alone.
    assert SecretBox("new-secret-0123456789").decrypt(new_token) == "sk-new"
    assert SecretBox("old-secret-0123456789").decrypt(new_token) is None


def test_unset_or_blank_means_no_box() -> None:
    assert secret_box(None) is None
    assert secret_box("") is None
    assert secret_box(" , ") is None
    with pytest.raises(ValueError, match="empty"):
        SecretBox(",")
