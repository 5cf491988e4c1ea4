"""In-process cost of one scope token: Ed25519 sign (caller) and verify + replay-cache check (service).

python bench/scope_tokens.py [--tokens 20000]
"""

from __future__ import annotations

import argparse
import time
import uuid

from cairn_contracts import subjects
from cairn_contracts.identity import Role
from cairn_scope import Scope, ScopeSigner, ScopeVerifier, generate_signing_key


def run(tokens: int) -> None:
    private, public = generate_signing_key("gateway.bench")
    signer, verifier = ScopeSigner.from_setting(private), ScopeVerifier.from_setting(public)
    scope = Scope(tenant_id=str(uuid.uuid4()), subject_id="agent", role=Role.agent, key_id=str(uuid.uuid4()))
    body = b'{"text":"' + b"x" * 1000 + b'"}'
    start = time.perf_counter()
    signed = [signer.sign(scope, subjects.MEMORY_REMEMBER, body) for _ in range(tokens)]
    sign_us = (time.perf_counter() - start) / tokens * 1e6
    start = time.perf_counter()
    for headers in signed:
        verifier.verify(headers, subjects.MEMORY_REMEMBER, body)
    verify_us = (time.perf_counter() - start) / tokens * 1e6
    print(
        f"sign {sign_us:.1f} us/token, verify+replay check {verify_us:.1f} us/token (1 KB body, n={tokens})"
    )
    print(
        f"replay cache after the run: {len(verifier.replays)} ids (~{tokens} within the {verifier.replays.ttl_seconds:.0f} s window)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=20000)
    run(parser.parse_args().tokens)
