"""Temporal payload encryption: AES-256-GCM over every payload a Cairn client or worker sends to Temporal.

Workflow inputs, results and activity arguments carry session text; with this codec Temporal's history
holds only ciphertext. The key id travels in the payload metadata, so several keys can decrypt at once:
rotate by putting a new key first in `CAIRN_PAYLOAD_KEYS` (it encrypts from then on) and keeping the old
ones after it until no open history needs them (the namespace retention period).
"""

import base64
import dataclasses
import os
from collections.abc import Sequence

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import DataConverter, DefaultFailureConverterWithEncodedAttributes, PayloadCodec

from cairn_scope.signing import parse_keyring

ENCODING = b"binary/encrypted"
KEY_ID_METADATA = "encryption-key-id"
NONCE_BYTES = 12


class PayloadKeyError(ValueError):
    """A payload names a key this process does not hold, or fails authentication."""


class AesGcmCodec(PayloadCodec):
    """Encrypts with the first key; decrypts with whichever key the payload names."""

    def __init__(self, keys: dict[str, bytes]) -> None:
        if not keys:
            raise ValueError("CAIRN_PAYLOAD_KEYS names no key")
        if any(len(key) != 32 for key in keys.values()):
            raise ValueError("CAIRN_PAYLOAD_KEYS: every key must be 32 bytes (AES-256)")
        self._ciphers = {kid: AESGCM(key) for kid, key in keys.items()}
        self._encrypt_id = next(iter(keys))

    @classmethod
    def from_setting(cls, text: str) -> "AesGcmCodec":
        """From `CAIRN_PAYLOAD_KEYS` = `<kid>=<base64url 32 bytes>,...` (the first encrypts)."""
        return cls(parse_keyring(text, "CAIRN_PAYLOAD_KEYS"))

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.encrypt(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.decrypt(p) for p in payloads]

    def encrypt(self, payload: Payload) -> Payload:
        nonce = os.urandom(NONCE_BYTES)
        # The key id is authenticated too: a payload cannot be relabelled to another key.
        sealed = self._ciphers[self._encrypt_id].encrypt(
            nonce, payload.SerializeToString(), self._encrypt_id.encode()
        )
        return Payload(
            metadata={"encoding": ENCODING, KEY_ID_METADATA: self._encrypt_id.encode()}, data=nonce + sealed
        )

    def decrypt(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload  # written before encryption was on; still readable
        key_id = payload.metadata.get(KEY_ID_METADATA, b"").decode()
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise PayloadKeyError(f"payload is encrypted with key {key_id!r}, which this process lacks")
        try:
            plain = cipher.decrypt(payload.data[:NONCE_BYTES], payload.data[NONCE_BYTES:], key_id.encode())
        except Exception:
            raise PayloadKeyError(f"payload under key {key_id!r} does not decrypt") from None
        return Payload.FromString(plain)


def encrypted_converter(payload_keys: str) -> DataConverter:
    """Cairn's data converter: pydantic payloads (as before), encrypted, failure messages encrypted too."""
    from temporalio.contrib.pydantic import pydantic_data_converter

    return dataclasses.replace(
        pydantic_data_converter,
        payload_codec=AesGcmCodec.from_setting(payload_keys),
        failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
    )


def generate_payload_key(key_id: str) -> str:
    """A fresh `CAIRN_PAYLOAD_KEYS` entry."""
    return f"{key_id}={base64.urlsafe_b64encode(AESGCM.generate_key(bit_length=256)).decode()}"
