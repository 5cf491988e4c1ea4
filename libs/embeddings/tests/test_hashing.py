from __future__ import annotations

import hashlib

from cairn_embeddings import content_hash


class TestContentHash:
    def test_is_sha256_of_stripped_text(self) -> None:
        assert content_hash("  hello\n") == hashlib.sha256(b"hello").hexdigest()

    def test_composed_and_decomposed_forms_hash_alike(self) -> None:
        assert content_hash("caf\u00e9") == content_hash("cafe\u0301")

    def test_different_text_differs(self) -> None:
        assert content_hash("dark mode") != content_hash("light mode")
