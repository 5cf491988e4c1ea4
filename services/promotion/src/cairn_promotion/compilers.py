"""Which compiler a tenant's sessions go to: its own OpenAI-compatible chat endpoint (bring your own key)
when configured, else the deployment default (the offline compiler unless configured otherwise)."""

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_contracts.promotion import Candidate, Turn
from cairn_promotion.compiler import Compiler
from cairn_promotion.llm_compiler import CompileError, OpenAICompatibleCompiler
from cairn_providers import ProviderConfig, SecretBox
from cairn_providers.registry import TenantRegistry


class _NoKeyCompiler:
    """Configured without a usable key: compiling fails (retried, and the watermark does not advance)."""

    async def compile(self, turns: Sequence[Turn]) -> list[Candidate]:
        raise CompileError("the tenant's compiler provider has no API key")


class TenantCompilers(TenantRegistry[Compiler]):
    def __init__(
        self,
        default: Compiler,
        sessionmaker: async_sessionmaker[AsyncSession],
        box: SecretBox | None,
        *,
        timeout: float,
        ttl_seconds: float = 30.0,
    ) -> None:
        def build(config: ProviderConfig) -> Compiler:
            if not config.api_key:
                return _NoKeyCompiler()
            return OpenAICompatibleCompiler(config.base_url, config.api_key, config.model, timeout=timeout)

        super().__init__("compiler", default, build, sessionmaker, box, ttl_seconds=ttl_seconds)
