"""The embedded stack's bus secrets: a NATS password per principal, an Ed25519 scope key per signer and
a Temporal payload key, generated on first use and kept in `<data_dir>/bus_secrets.json` (mode 0600),
so `./task up` keeps them across restarts and every test stack runs with fresh ones."""

from __future__ import annotations

import base64
import json
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

from cairn_contracts.bus import PRINCIPALS, nats_permissions, signers
from cairn_scope import generate_signing_key

OPERATOR = "operator"
"""A dev-only NATS user with every permission, for debugging (`nats sub '>'`); no service uses it."""

# Principals that talk to Temporal and so need the payload key (the gateway for its codec endpoint).
PAYLOAD_KEY_HOLDERS = frozenset({"gateway", "promotion", "graduation"})


@dataclass(frozen=True)
class BusSecrets:
    nats_passwords: dict[str, str]
    signing_keys: dict[str, str]  # principal -> `kid=private seed`
    verify_keys: str  # every signer's `kid=public key`
    payload_keys: str

    @classmethod
    def generate(cls) -> BusSecrets:
        pairs = {name: generate_signing_key(f"{name}.dev1") for name in signers()}
        return cls(
            nats_passwords={name: secrets.token_urlsafe(24) for name in (*PRINCIPALS, OPERATOR)},
            signing_keys={name: private for name, (private, _public) in pairs.items()},
            verify_keys=",".join(public for _private, public in pairs.values()),
            payload_keys="dev1=" + base64.urlsafe_b64encode(os.urandom(32)).decode(),
        )

    @classmethod
    def load_or_create(cls, path: Path) -> BusSecrets:
        if path.exists():
            stored = cls(**json.loads(path.read_text()))
            if set(stored.nats_passwords) >= {*PRINCIPALS, OPERATOR}:
                return stored
        fresh = cls.generate()  # first run, or a principal was added since
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.chmod(0o600)
        path.write_text(json.dumps(asdict(fresh)))
        return fresh

    def service_env(self, principal: str) -> dict[str, str]:
        """What one process of `principal` gets: its NATS user, the public keys, its own private key."""
        env = {
            "CAIRN_NATS_USER": principal,
            "CAIRN_NATS_PASSWORD": self.nats_passwords[principal],
            "CAIRN_SCOPE_VERIFY_KEYS": self.verify_keys,
        }
        if principal in self.signing_keys:
            env["CAIRN_SCOPE_SIGNING_KEY"] = self.signing_keys[principal]
        if principal in PAYLOAD_KEY_HOLDERS:
            env["CAIRN_PAYLOAD_KEYS"] = self.payload_keys
        return env

    def nats_authorization(self) -> dict[str, object]:
        """The nats-server `authorization` block: one user per principal, no anonymous access."""
        users: list[dict[str, object]] = [
            {"user": name, "password": self.nats_passwords[name], "permissions": nats_permissions(p)}
            for name, p in PRINCIPALS.items()
        ]
        users.append({"user": OPERATOR, "password": self.nats_passwords[OPERATOR]})
        return {"users": users}


def password_variable(principal: str) -> str:
    """The environment variable a rendered config reads a principal's password from."""
    return "CAIRN_NATS_PASSWORD_" + principal.upper().replace("-", "_")


def nats_config_with_variables() -> str:
    """The same `authorization` block for a deployed nats-server, passwords as `$CAIRN_NATS_PASSWORD_<P>`
    references that nats-server resolves from its environment (fill them from Secrets)."""
    users = [
        f'{{"user": {json.dumps(name)}, "password": ${password_variable(name)}, '
        f'"permissions": {json.dumps(nats_permissions(p))}}}'
        for name, p in PRINCIPALS.items()
    ]
    return '{"authorization": {"users": [\n  ' + ",\n  ".join(users) + "\n]}}\n"


if __name__ == "__main__":
    print(nats_config_with_variables(), end="")  # noqa: T201 - a config generator for deploy manifests
