"""No secret ever reaches a log file: after traffic that exercises every service, and failures that make
them log (a provider that refuses and quotes the key back, a failing compiler, unknown keys), every log
file of the stack is scanned for the API keys, provider keys and deployment secrets that were in play.
Settings hold secrets (signing keys, payload keys, NATS passwords, the provider secrets key, the database
URL) as `SecretStr`, and provider configs and clients redact keys in their repr."""

import asyncio
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest_asyncio
from aiohttp import web

from cairn_devstack.cairn import CairnStack
from cairn_embeddings import OpenAICompatibleEmbedder
from cairn_gateway.settings import GatewaySettings
from cairn_promotion.llm_compiler import OpenAICompatibleCompiler
from cairn_providers import ProviderConfig
from conftest import TenantHandle, bearer

EMBEDDING_KEY = "sk-embed-" + secrets.token_hex(16)
COMPILER_KEY = "sk-compile-" + secrets.token_hex(16)


@pytest_asyncio.fixture
async def leaky_provider() -> AsyncIterator[str]:
    """An OpenAI-compatible endpoint that refuses every call and quotes the caller's key in its error."""

    async def refuse(request: web.Request) -> web.Response:
        quoted = request.headers.get("Authorization", "")
        return web.json_response({"error": {"message": f"bad key {quoted}"}}, status=401)

    async def fail(request: web.Request) -> web.Response:
        quoted = request.headers.get("Authorization", "")
        return web.json_response({"error": {"message": f"overloaded for {quoted}"}}, status=500)

    app = web.Application()
    app.router.add_post("/v1/embeddings", refuse)
    app.router.add_post("/v1/chat/completions", fail)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    yield f"http://{host}:{port}/v1"
    await runner.cleanup()


async def provoke_everything(http: httpx.AsyncClient, tenant: TenantHandle, url: str) -> list[str]:
    """Traffic through every service, with failures that log; returns the API keys it used."""
    put = await http.put(
        f"/api/v1/tenants/{tenant.id}/providers",
        json={
            "embedding": {"base_url": url, "model": "leaky", "api_key": EMBEDDING_KEY},
            "compiler": {"base_url": url, "model": "leaky", "api_key": COMPILER_KEY},
        },
        headers=bearer(tenant.admin_key),
    )
    assert put.status_code == 200, put.text
    await asyncio.sleep(1.2)  # the services' provider cache TTL in tests
    agent, user = await tenant.agent(), await tenant.key("user")
    minted = await http.post("/api/v1/keys", json={"role": "agent", "agent_id": "x"}, headers=bearer(user))
    assert minted.status_code == 201
    minted_key = minted.json()["data"]["key"]
    headers = bearer(agent)
    assert (
        await http.post("/api/v1/memory", json={"text": "the deploy runs on fridays"}, headers=headers)
    ).status_code == 201
    recalled = await http.post("/api/v1/memory/recall", json={"query": "deploy"}, headers=headers)
    assert recalled.json()["meta"]["fallback"] is True  # the refusing provider was called and failed
    knowledge = await http.post("/api/v1/knowledge", json={"title": "t", "body": "b"}, headers=headers)
    assert knowledge.status_code == 503  # the gate needs the (refusing) embedder
    await http.post("/api/v1/recall", json={"query": "deploy"}, headers=headers)
    for i in range(3):
        turn = {
            "tier": "session",
            "session_id": "leak",
            "role": "user",
            "content": f"I always deploy on day {i}",
        }
        assert (await http.post("/api/v1/memory", json=turn, headers=headers)).status_code == 201
    assert (
        await http.post("/api/v1/memory/promote", json={"session_id": "leak"}, headers=headers)
    ).status_code == 202
    unknown = "cairn_" + secrets.token_urlsafe(32)
    assert (await http.get("/api/v1/whoami", headers=bearer(unknown))).status_code == 401
    await http.delete(f"/api/v1/keys/{minted.json()['data']['id']}", headers=bearer(user))
    assert (await http.get("/api/v1/whoami", headers=bearer(minted_key))).status_code in (200, 401)
    await asyncio.sleep(4)  # the compile activity's first attempts fail and are logged; logs flush
    return [agent, user, minted_key, unknown]


async def test_no_secret_in_any_log_file(
    http: httpx.AsyncClient, stack: CairnStack, tenant: TenantHandle, admin_key: str, leaky_provider: str
) -> None:
    keys = await provoke_everything(http, tenant, leaky_provider)
    needles = {
        "admin key": admin_key,
        **{f"api key {i}": key for i, key in enumerate(keys)},
        "embedding provider key": EMBEDDING_KEY,
        "compiler provider key": COMPILER_KEY,
        "provider secrets key": stack.config.provider_secrets_key,
        **{f"signing key of {who}": key.split("=", 1)[1] for who, key in stack.secrets.signing_keys.items()},
        **{f"NATS password of {who}": password for who, password in stack.secrets.nats_passwords.items()},
        "payload key": stack.secrets.payload_keys.split("=", 1)[1],
    }
    logs = [p for p in Path(stack.data_dir, "logs").rglob("*") if p.is_file()]
    assert {p.stem for p in logs} >= {
        "gateway",
        "memory",
        "memory-embedder",
        "recall",
        "knowledge",
        "promotion",
    }
    text = {p.name: p.read_text(errors="replace") for p in logs}
    assert any("degraded" in t or "unavailable" in t for t in text.values())  # the failures did log
    leaks = [(what, name) for what, secret in needles.items() for name, t in text.items() if secret in t]
    assert leaks == []


async def test_settings_and_provider_objects_redact_secrets(stack: CairnStack) -> None:
    signing_key = stack.secrets.signing_keys["gateway"]
    payload_keys = stack.secrets.payload_keys
    settings = GatewaySettings(
        scope_verify_keys=stack.secrets.verify_keys,
        scope_signing_key=signing_key,
        payload_keys=payload_keys,
        nats_password="n" * 24,
        provider_secrets_key="p" * 32,
        database_url="postgresql://cairn:db-password-123@db/cairn",
    )
    hidden = (
        signing_key.split("=", 1)[1],
        payload_keys.split("=", 1)[1],
        "n" * 24,
        "p" * 32,
        "db-password-123",
    )
    for shown in (repr(settings), str(settings), settings.model_dump_json()):
        for secret in hidden:
            assert secret not in shown
    config = ProviderConfig("http://127.0.0.1:1/v1", "m", EMBEDDING_KEY)
    embedder = OpenAICompatibleEmbedder("http://127.0.0.1:1/v1", EMBEDDING_KEY, "m", 384)
    compiler = OpenAICompatibleCompiler("http://127.0.0.1:1/v1", COMPILER_KEY, "m")
    for obj in (config, embedder, compiler):
        assert EMBEDDING_KEY not in repr(obj)
        assert COMPILER_KEY not in repr(obj)
