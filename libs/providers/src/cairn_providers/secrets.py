"""Provider API keys are stored encrypted (Fernet) under a key from configuration, never in clear."""

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from pydantic import SecretStr


class SecretBox:
    """Encrypts and decrypts provider API keys.

    Args:
        secret: `CAIRN_PROVIDER_SECRETS_KEY`; any high-entropy string (a Fernet key is derived from it).
            During a rotation, several comma-separated: the first encrypts, every one decrypts.
    """

    def __init__(self, secret: str) -> None:
        secrets = [part.strip() for part in secret.split(",") if part.strip()]
        if not secrets:
            raise ValueError("CAIRN_PROVIDER_SECRETS_KEY is empty")
        self._fernet = MultiFernet(
            [Fernet(base64.urlsafe_b64encode(hashlib.sha256(s.encode()).digest())) for s in secrets]
        )

    def encrypt(self, plaintext: str) -> str:
        return self._fernet.encrypt(plaintext.encode()).decode()

    def decrypt(self, token: str) -> str | None:
        """The plaintext, or None when the token was made under another key (treated as "no key")."""
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except InvalidToken:
            return None


def secret_box(secret: SecretStr | str | None) -> SecretBox | None:
    """The box for `CAIRN_PROVIDER_SECRETS_KEY`, or None when it is not configured (tenant keys unusable)."""
    if isinstance(secret, SecretStr):
        secret = secret.get_secret_value()
    return SecretBox(secret) if secret and secret.strip(", ") else None
