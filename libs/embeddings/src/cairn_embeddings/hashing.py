"""Content hashing used to stamp which text an embedding was computed from."""

from __future__ import annotations

import hashlib
import unicodedata

__all__ = ["content_hash"]


def content_hash(text: str) -> str:
    """Return the sha256 hex digest of ``text`` after NFC normalisation and stripping.

    Store it as ``embedding_content_hash`` next to a vector: when the hash of the current text differs,
    the vector is stale. NFC makes visually identical strings (composed vs decomposed accents) hash alike.

    Args:
        text: The embedded text.

    Returns:
        64 lowercase hex characters.
    """
    return hashlib.sha256(unicodedata.normalize("NFC", text).strip().encode("utf-8")).hexdigest()
