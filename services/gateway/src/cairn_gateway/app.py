"""Gateway application factory."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from fastapi import FastAPI, Response
from fastapi.responses import JSONResponse

from cairn_contracts.health import ReadyReport
from cairn_gateway import (
    metrics,
    routes_audit,
    routes_codec,
    routes_graduation,
    routes_identity,
    routes_knowledge,
    routes_memory,
    routes_recall_context,
    routes_usage,
)
from cairn_gateway.auth import Authenticator, KeyCache
from cairn_gateway.body_limit import BodyLimitMiddleware
from cairn_gateway.deps import GatewayState, StateDep
from cairn_gateway.errors import install_error_handlers
from cairn_gateway.idempotency import IdempotencyStore, install_idempotency
from cairn_gateway.input_guard import InputGuardMiddleware
from cairn_gateway.mcp_mount import mount_mcp
from cairn_gateway.openapi_doc import install_openapi
from cairn_gateway.ratelimit import Bucket, RateLimiter
from cairn_gateway.readiness import TemporalProbe, http_ready, readiness, readiness_checks
from cairn_gateway.settings import GatewaySettings
from cairn_gateway.store import IdentityStore
from cairn_observability.tracing import instrument_fastapi
from cairn_providers import secret_box
from cairn_servicekit import ServiceClient, eventloop
from cairn_servicekit.bus import connect_nats
from cairn_servicekit.payload_codec import AesGcmCodec
from cairn_storage import create_engine, make_sessionmaker
from cairn_storage.pool import create_pool

API_DESCRIPTION = (
    "Durable, isolated memory for AI agents. Authenticate with `Authorization: Bearer <key>`; every memory "
    "call is confined to the (tenant, subject) derived from that key. Errors are "
    '`{"error": {"code", "message", "status"}}`.'
)


def create_app(settings: GatewaySettings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = create_engine(settings.database_url, pool_size=10)
        sessionmaker = make_sessionmaker(engine)
        # Idempotency claims (one atomic statement each) and rate-limit takes (one per request): fixed
        # pools, because an overflow connection is closed on return and reopened by the next burst.
        limiter_engine = create_engine(
            settings.database_url,
            pool_size=8,
            max_overflow=0,
            isolation_level="AUTOCOMMIT",
            server_settings={"synchronous_commit": "off"},
        )
        limiter_pool = await create_pool(
            settings.database_url, size=12, server_settings={"synchronous_commit": "off"}
        )
        nc = await connect_nats(settings, "gateway")
        box = secret_box(settings.provider_secrets_key)
        store = IdentityStore(sessionmaker, box, key_pool=limiter_pool)
        services = ServiceClient(nc, settings.scope_signer, settings.request_timeout_seconds)
        temporal = TemporalProbe(settings.temporal_address, settings.temporal_namespace)
        probes = httpx.AsyncClient()
        embedder = http_ready(
            "memory-embedder", settings.memory_embedder_http_url, probes, settings.readiness_timeout_seconds
        )
        app.state.gateway = GatewayState(
            settings=settings,
            store=store,
            auth=Authenticator(store, KeyCache(settings.key_cache_ttl_seconds)),
            limiter=RateLimiter(
                limiter_pool,
                write=Bucket(settings.rate_limit_per_second, settings.rate_limit_burst),
                read=Bucket(settings.read_rate_limit_per_second, settings.read_rate_limit_burst),
            ),
            services=services,
            readiness_checks=readiness_checks(
                sessionmaker, nc, temporal, services, settings.readiness_timeout_seconds, embedder
            ),
            codec=(
                AesGcmCodec.from_setting(settings.payload_keys.get_secret_value())
                if settings.payload_keys
                else None
            ),
        )
        app.state.idempotency = IdempotencyStore(limiter_engine)
        async with mcp.running():
            eventloop.settle_gc()
            yield
        await nc.drain()
        await probes.aclose()
        await limiter_pool.close()
        await limiter_engine.dispose()
        await engine.dispose()

    app = FastAPI(title="Cairn", version="0.1.0", description=API_DESCRIPTION, lifespan=lifespan)
    install_error_handlers(app)
    install_idempotency(app)
    # Between the idempotency buffer and the body limit: an unstorable input never claims an
    # Idempotency-Key, and the guard only ever reads a body the limit has already bounded.
    app.add_middleware(InputGuardMiddleware)
    # Added after (so outside) the idempotency buffer: an oversized body is refused before anyone reads it.
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    mcp = mount_mcp(app)
    app.add_middleware(metrics.MetricsMiddleware)
    instrument_fastapi(app)  # outermost: its server span covers the other middleware too
    if settings.codec_cors_origin_list:
        app.add_middleware(routes_codec.CodecCorsMiddleware, allow_origins=settings.codec_cors_origin_list)

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        """The process is alive."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"], response_model=ReadyReport, responses={503: {"model": ReadyReport}})
    async def readyz(state: StateDep) -> JSONResponse:
        """200 only when PostgreSQL, NATS, Temporal and every service answer; else 503 naming each."""
        report = await readiness(state.readiness_checks)
        return JSONResponse(report.model_dump(), status_code=200 if report.status == "ok" else 503)

    @app.get("/metrics", tags=["ops"], include_in_schema=False)
    async def prometheus() -> Response:
        return metrics.render()

    # The memory routes first: FastAPI tries included routers in order (walking each one's routes per
    # request), and the write path is the hottest. No memory route shares a method and path with another.
    app.include_router(routes_memory.router)
    app.include_router(routes_identity.router)
    app.include_router(routes_graduation.router)
    app.include_router(routes_knowledge.router)
    app.include_router(routes_recall_context.router)
    app.include_router(routes_usage.router)
    app.include_router(routes_codec.router)
    app.include_router(routes_audit.router)
    install_openapi(app)
    return app
