"""Which compiler a tenant's sessions go to: its own OpenAI-compatible chat endpoint (bring your own key)
when configured, else the deployment default (the offline compiler unless configured otherwise)."""

import time
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_contracts.promotion import Candidate, Turn
from cairn_promotion.compiler import Compiler
from cairn_promotion.llm_compiler import CompileError, OpenAICompatibleCompiler
from cairn_providers import ProviderConfig, SecretBox, load_providers


class _NoKeyCompiler:
    """Configured without a usable key: compiling fails (retried, and the watermark does not advance)."""

    async def compile(self, turns: Sequence[Turn]) -> list[Candidate]:
        raise CompileError("the tenant's compiler provider has no API key")


class TenantCompilers:
    def __init__(
        self,
        default: Compiler,
        sessionmaker: async_sessionmaker[AsyncSession],
        box: SecretBox | None,
        *,
        timeout: float,
        ttl_seconds: float = 30.0,
    ) -> None:
        self.default = default
        self._sm = sessionmaker
        self._box = box
        self._timeout = timeout
        self._ttl = ttl_seconds
        self._cache: dict[str, tuple[float, ProviderConfig | None, Compiler]] = {}

    async def for_tenant(self, tenant_id: str) -> Compiler:
        cached = self._cache.get(tenant_id)
        if cached is not None and cached[0] > time.monotonic():
            return cached[2]
        async with self._sm() as session:
            config = (await load_providers(session, tenant_id, self._box)).compiler
        compiler = cached[2] if cached is not None and cached[1] == config else self._build(config)
        self._cache[tenant_id] = (time.monotonic() + self._ttl, config, compiler)
        return compiler

    def _build(self, config: ProviderConfig | None) -> Compiler:
        if config is None:
            return self.default
        if not config.api_key:
            return _NoKeyCompiler()
        return OpenAICompatibleCompiler(config.base_url, config.api_key, config.model, timeout=self._timeout)
