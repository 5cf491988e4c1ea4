"""API key material: random, prefixed, stored only as a hash."""

import hashlib
import secrets

KEY_PREFIX = "cairn_"
DISPLAY_PREFIX_CHARS = 12


def new_key() -> str:
    """A fresh key: `cairn_` + 256 bits of URL-safe randomness."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def key_hash(key: str) -> str:
    """SHA-256 of the key. Keys carry 256 random bits, so a fast hash is safe and the lookup is an index hit."""
    return hashlib.sha256(key.encode()).hexdigest()


def display_prefix(key: str) -> str:
    return key[:DISPLAY_PREFIX_CHARS]


def looks_like_key(token: str) -> bool:
    return token.startswith(KEY_PREFIX) and 20 <= len(token) <= 200
