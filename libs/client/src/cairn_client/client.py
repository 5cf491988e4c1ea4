"""`CairnClient` (sync) and `AsyncCairnClient`: one method per REST operation, typed by the contracts.

Both read `CAIRN_GATEWAY_URL` / `CAIRN_API_KEY` when not given, retry 429 / 503 and connect failures a
bounded number of times (honouring `Retry-After`), and send a fresh `Idempotency-Key` with every write,
reused on that call's own retries, so a retried write is applied once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Self, TypeVar

import httpx
from pydantic import SecretStr
from tenacity import AsyncRetrying, Retrying

from cairn_client import _calls as calls
from cairn_client._calls import History, KnowledgeHits, Memories, RecallResult
from cairn_client._transport import (
    Call,
    Config,
    RetryPolicy,
    parse_response,
    request_headers,
    secret,
    transport_error,
)
from cairn_contracts import identity
from cairn_contracts.graduation import GraduateResult
from cairn_contracts.knowledge import Article, ProposeResult
from cairn_contracts.memory import Memory, SessionTurn
from cairn_contracts.promotion import PromoteAccepted
from cairn_contracts.recall_context import RecallContextResponse, ReferencedResult

T = TypeVar("T")

# Aliases: inside the classes `list` is a method name.
Projects = list[identity.Project]
Keys = list[identity.ApiKeyInfo]

Role = str  # "user" | "assistant" | "system" | "fact"


class _Base:
    _owns_http: bool  # False for a `with_options` copy: the original closes the shared pool

    def __init__(
        self,
        base_url: str | None,
        api_key: str | SecretStr | None,
        timeout: float | None,
        max_retries: int | None,
        retry: bool,
        impersonate_tenant: str | None,
    ) -> None:
        self.config = Config.resolve(
            base_url, api_key, timeout, max_retries if retry else 0, impersonate_tenant
        )
        self._retry = RetryPolicy(self.config.max_retries, self.config.max_retry_wait)

    @property
    def base_url(self) -> str:
        return self.config.base_url

    def with_options(
        self, *, api_key: str | SecretStr | None = None, impersonate_tenant: str | None = None
    ) -> Self:
        """A client sharing this one's connection pool with another key or impersonated tenant."""
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other.config = dataclasses.replace(
            self.config,
            api_key=secret(api_key) if api_key is not None else self.config.api_key,
            impersonate_tenant=impersonate_tenant or self.config.impersonate_tenant,
        )
        other._owns_http = False
        return other

    def _headers(self, call: Call[Any], idempotency_key: str | None) -> dict[str, str]:
        return {**self.config.headers(), **request_headers(call, idempotency_key)}


class CairnClient(_Base):
    """The synchronous SDK client.

    Args:
        base_url: the gateway, e.g. `http://127.0.0.1:58080` (default: `CAIRN_GATEWAY_URL`).
        api_key: the caller's key (default: `CAIRN_API_KEY`).
        timeout: seconds per attempt (default: `CAIRN_TIMEOUT_SECONDS`, 30).
        max_retries: extra attempts on 429 / 503 / connect failures (default: `CAIRN_MAX_RETRIES`, 3).
        retry: False turns retries off.
        impersonate_tenant: superadmin only: the tenant to act in (`X-Impersonate-Tenant`).
        transport: an httpx transport (tests, in-process ASGI).

    Raises (from every method): a `CairnAPIError` subclass for an error reply, `CairnConnectionError` /
    `CairnTimeout` when the gateway cannot be reached.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        *,
        timeout: float | None = None,
        max_retries: int | None = None,
        retry: bool = True,
        impersonate_tenant: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, max_retries, retry, impersonate_tenant)
        self._http = httpx.Client(
            base_url=self.config.base_url, timeout=self.config.timeout, transport=transport
        )
        self._owns_http = True

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> CairnClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _once(self, call: Call[T], headers: dict[str, str]) -> T:
        try:
            response = self._http.request(
                call.method, call.path, json=call.json, params=call.params, headers=headers
            )
        except httpx.TransportError as exc:
            raise transport_error(exc, self.config.base_url) from exc
        return parse_response(call, response)

    def _run(self, call: Call[T], idempotency_key: str | None = None) -> T:
        headers = self._headers(call, idempotency_key)
        result: T = Retrying(**self._retry.kwargs())(self._once, call, headers)
        return result

    # -- memory -------------------------------------------------------------------------------------
    def remember(
        self,
        text: str,
        *,
        tags: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        confidence: float | None = None,
        project_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Memory:
        """Write a long-term memory (`POST /api/v1/memory`)."""
        return self._run(calls.remember(text, tags, metadata, confidence, project_id), idempotency_key)

    def append_turn(
        self,
        session_id: str,
        role: Role,
        content: str,
        *,
        metadata: dict[str, Any] | None = None,
        ttl_seconds: int | None = None,
        expires_at: datetime | None = None,
        idempotency_key: str | None = None,
    ) -> SessionTurn:
        """Append one turn to a session (`POST /api/v1/memory` with `tier: session`)."""
        call = calls.append_turn(session_id, role, content, metadata, ttl_seconds, expires_at)
        return self._run(call, idempotency_key)

    def session_history(
        self, session_id: str, *, limit: int | None = None, offset: int | None = None
    ) -> History:
        """A session's turns in insertion order (`GET /api/v1/sessions/{id}/history`)."""
        return self._run(calls.session_history(session_id, limit, offset))

    def recall(
        self,
        query: str,
        *,
        limit: int | None = None,
        project_id: str | None = None,
        include_superseded: bool | None = None,
        mode: str | None = None,
    ) -> RecallResult:
        """Recall own memories for a query (`POST /api/v1/memory/recall`); see `meta` for fallback."""
        return self._run(calls.recall(query, limit, project_id, include_superseded, mode))

    def list(
        self,
        *,
        limit: int | None = None,
        offset: int | None = None,
        source: str | None = None,
        tag: str | None = None,
        project_id: str | None = None,
        include_superseded: bool | None = None,
        all_subjects: bool | None = None,
    ) -> Memories:
        """List own long-term memories (`GET /api/v1/memory`)."""
        call = calls.list_memories(limit, offset, source, tag, project_id, include_superseded, all_subjects)
        return self._run(call)

    def get(self, memory_id: str) -> Memory:
        """One memory (`GET /api/v1/memory/{id}`); another scope's id is `NotFound`."""
        return self._run(calls.get(memory_id))

    def forget(self, memory_id: str) -> Memory:
        """Delete a memory outright (`DELETE /api/v1/memory/{id}`)."""
        return self._run(calls.forget(memory_id))

    def supersede(
        self,
        memory_id: str,
        text: str,
        *,
        tags: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        confidence: float | None = None,
        project_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Memory:
        """Write a newer memory that supersedes `memory_id` (`POST /api/v1/memory/{id}/supersede`)."""
        call = calls.supersede(memory_id, text, tags, metadata, confidence, project_id)
        return self._run(call, idempotency_key)

    def promote(self, session_id: str, *, idempotency_key: str | None = None) -> PromoteAccepted:
        """Start promotion of a session into long-term memories (`POST /api/v1/memory/promote`)."""
        return self._run(calls.promote(session_id), idempotency_key)

    # -- merged recall, knowledge, graduation -------------------------------------------------------
    def recall_context(
        self,
        query: str,
        *,
        limit: int | None = None,
        project_id: str | None = None,
        session_id: str | None = None,
    ) -> RecallContextResponse:
        """Merged recall, memory and knowledge in one list with the selection ledger (`POST /api/v1/recall`)."""
        return self._run(calls.recall_context(query, limit, project_id, session_id))

    def referenced(
        self, recall_id: str, article_ids: Sequence[str], *, project_id: str | None = None
    ) -> ReferencedResult:
        """Record which surfaced articles of a merged recall were used (`POST /api/v1/recall/{id}/referenced`)."""
        return self._run(calls.referenced(recall_id, article_ids, project_id))

    def graduate(
        self, memory_id: str, *, re_scope: str | None = None, idempotency_key: str | None = None
    ) -> GraduateResult:
        """Graduate one memory into an owner-visible knowledge article (`POST /api/v1/memory/graduate`)."""
        return self._run(calls.graduate(memory_id, re_scope), idempotency_key)

    def knowledge_propose(
        self,
        title: str,
        body: str,
        *,
        category: str | None = None,
        tags: Sequence[str] | None = None,
        project_id: str | None = None,
        visibility: str | None = None,
        idempotency_key: str | None = None,
    ) -> ProposeResult:
        """Propose an article through the novelty gate (`POST /api/v1/knowledge`)."""
        call = calls.knowledge_propose(title, body, category, tags, project_id, visibility)
        return self._run(call, idempotency_key)

    def knowledge_get(self, article_id: str) -> Article:
        """One article with its body (`GET /api/v1/knowledge/{id}`)."""
        return self._run(calls.knowledge_get(article_id))

    def knowledge_search(
        self, query: str, *, limit: int | None = None, project_id: str | None = None, mode: str | None = None
    ) -> KnowledgeHits:
        """Hybrid article search (`POST /api/v1/knowledge/search`)."""
        return self._run(calls.knowledge_search(query, limit, project_id, mode))

    # -- identity and projects ----------------------------------------------------------------------
    def whoami(self) -> identity.WhoAmI:
        """The scope the server derives from this key."""
        return self._run(calls.whoami())

    def resolve_project(
        self, *, slug: str | None = None, repo_url: str | None = None, name: str | None = None
    ) -> identity.Project:
        """Map slug > repo_url > name to a project of the caller's tenant."""
        return self._run(calls.resolve_project(slug, repo_url, name))

    def create_project(
        self, name: str, slug: str, *, repo_url: str | None = None, idempotency_key: str | None = None
    ) -> identity.Project:
        return self._run(calls.create_project(name, slug, repo_url), idempotency_key)

    def list_projects(self) -> Projects:
        return self._run(calls.list_projects())

    # -- operators ----------------------------------------------------------------------------------
    def create_tenant(self, name: str, *, idempotency_key: str | None = None) -> identity.Tenant:
        """Superadmin: create a tenant."""
        return self._run(calls.create_tenant(name), idempotency_key)

    def patch_tenant(self, tenant_id: str, **fields: Any) -> identity.Tenant:
        """Superadmin: change a tenant's name, quota, promotion budget or rate limit."""
        return self._run(calls.patch_tenant(tenant_id, fields))

    def create_key(
        self,
        role: str = "agent",
        *,
        tenant_id: str | None = None,
        agent_id: str | None = None,
        name: str | None = None,
        idempotency_key: str | None = None,
    ) -> identity.CreatedKey:
        """Create an API key; its secret (`.key`) is shown only in this answer."""
        return self._run(calls.create_key(role, tenant_id, agent_id, name), idempotency_key)

    def list_keys(self, tenant_id: str | None = None) -> Keys:
        """A tenant's keys, never their secrets (superadmin: pass the tenant)."""
        return self._run(calls.list_keys(tenant_id))

    def revoke_key(self, key_id: str) -> identity.ApiKeyInfo:
        return self._run(calls.revoke_key(key_id))

    def put_providers(self, tenant_id: str, body: dict[str, Any]) -> identity.TenantProvidersOut:
        """Superadmin: a tenant's own embedding / compiler endpoint (bring your own key)."""
        return self._run(calls.put_providers(tenant_id, body))

    def get_providers(self, tenant_id: str) -> identity.TenantProvidersOut:
        return self._run(calls.get_providers(tenant_id))


class AsyncCairnClient(_Base):
    """The asynchronous SDK client: the same methods as `CairnClient`, awaitable.

    Args:
        base_url, api_key, timeout, max_retries, retry, impersonate_tenant: as for `CairnClient`.
        transport: an httpx async transport (tests, in-process `httpx.ASGITransport`).
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        *,
        timeout: float | None = None,
        max_retries: int | None = None,
        retry: bool = True,
        impersonate_tenant: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, max_retries, retry, impersonate_tenant)
        self._http = httpx.AsyncClient(
            base_url=self.config.base_url, timeout=self.config.timeout, transport=transport
        )
        self._owns_http = True

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncCairnClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _once(self, call: Call[T], headers: dict[str, str]) -> T:
        try:
            response = await self._http.request(
                call.method, call.path, json=call.json, params=call.params, headers=headers
            )
        except httpx.TransportError as exc:
            raise transport_error(exc, self.config.base_url) from exc
        return parse_response(call, response)

    async def _run(self, call: Call[T], idempotency_key: str | None = None) -> T:
        headers = self._headers(call, idempotency_key)
        result: T = await AsyncRetrying(**self._retry.kwargs())(self._once, call, headers)
        return result

    # -- memory -------------------------------------------------------------------------------------
    async def remember(
        self,
        text: str,
        *,
        tags: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        confidence: float | None = None,
        project_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Memory:
        """Write a long-term memory (`POST /api/v1/memory`)."""
        return await self._run(calls.remember(text, tags, metadata, confidence, project_id), idempotency_key)

    async def append_turn(
        self,
        session_id: str,
        role: Role,
        content: str,
        *,
        metadata: dict[str, Any] | None = None,
        ttl_seconds: int | None = None,
        expires_at: datetime | None = None,
        idempotency_key: str | None = None,
    ) -> SessionTurn:
        """Append one turn to a session (`POST /api/v1/memory` with `tier: session`)."""
        call = calls.append_turn(session_id, role, content, metadata, ttl_seconds, expires_at)
        return await self._run(call, idempotency_key)

    async def session_history(
        self, session_id: str, *, limit: int | None = None, offset: int | None = None
    ) -> History:
        """A session's turns in insertion order."""
        return await self._run(calls.session_history(session_id, limit, offset))

    async def recall(
        self,
        query: str,
        *,
        limit: int | None = None,
        project_id: str | None = None,
        include_superseded: bool | None = None,
        mode: str | None = None,
    ) -> RecallResult:
        """Recall own memories for a query; see `meta` for fallback and strategy."""
        return await self._run(calls.recall(query, limit, project_id, include_superseded, mode))

    async def list(
        self,
        *,
        limit: int | None = None,
        offset: int | None = None,
        source: str | None = None,
        tag: str | None = None,
        project_id: str | None = None,
        include_superseded: bool | None = None,
        all_subjects: bool | None = None,
    ) -> Memories:
        """List own long-term memories."""
        call = calls.list_memories(limit, offset, source, tag, project_id, include_superseded, all_subjects)
        return await self._run(call)

    async def get(self, memory_id: str) -> Memory:
        return await self._run(calls.get(memory_id))

    async def forget(self, memory_id: str) -> Memory:
        return await self._run(calls.forget(memory_id))

    async def supersede(
        self,
        memory_id: str,
        text: str,
        *,
        tags: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        confidence: float | None = None,
        project_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Memory:
        call = calls.supersede(memory_id, text, tags, metadata, confidence, project_id)
        return await self._run(call, idempotency_key)

    async def promote(self, session_id: str, *, idempotency_key: str | None = None) -> PromoteAccepted:
        return await self._run(calls.promote(session_id), idempotency_key)

    # -- merged recall, knowledge, graduation -------------------------------------------------------
    async def recall_context(
        self,
        query: str,
        *,
        limit: int | None = None,
        project_id: str | None = None,
        session_id: str | None = None,
    ) -> RecallContextResponse:
        """Merged recall, memory and knowledge in one list with the selection ledger (`POST /api/v1/recall`)."""
        return await self._run(calls.recall_context(query, limit, project_id, session_id))

    async def referenced(
        self, recall_id: str, article_ids: Sequence[str], *, project_id: str | None = None
    ) -> ReferencedResult:
        """Record which surfaced articles of a merged recall were used (`POST /api/v1/recall/{id}/referenced`)."""
        return await self._run(calls.referenced(recall_id, article_ids, project_id))

    async def graduate(
        self, memory_id: str, *, re_scope: str | None = None, idempotency_key: str | None = None
    ) -> GraduateResult:
        """Graduate one memory into an owner-visible knowledge article (`POST /api/v1/memory/graduate`)."""
        return await self._run(calls.graduate(memory_id, re_scope), idempotency_key)

    async def knowledge_propose(
        self,
        title: str,
        body: str,
        *,
        category: str | None = None,
        tags: Sequence[str] | None = None,
        project_id: str | None = None,
        visibility: str | None = None,
        idempotency_key: str | None = None,
    ) -> ProposeResult:
        """Propose an article through the novelty gate (`POST /api/v1/knowledge`)."""
        call = calls.knowledge_propose(title, body, category, tags, project_id, visibility)
        return await self._run(call, idempotency_key)

    async def knowledge_get(self, article_id: str) -> Article:
        """One article with its body (`GET /api/v1/knowledge/{id}`)."""
        return await self._run(calls.knowledge_get(article_id))

    async def knowledge_search(
        self, query: str, *, limit: int | None = None, project_id: str | None = None, mode: str | None = None
    ) -> KnowledgeHits:
        """Hybrid article search (`POST /api/v1/knowledge/search`)."""
        return await self._run(calls.knowledge_search(query, limit, project_id, mode))

    # -- identity and projects ----------------------------------------------------------------------
    async def whoami(self) -> identity.WhoAmI:
        return await self._run(calls.whoami())

    async def resolve_project(
        self, *, slug: str | None = None, repo_url: str | None = None, name: str | None = None
    ) -> identity.Project:
        return await self._run(calls.resolve_project(slug, repo_url, name))

    async def create_project(
        self, name: str, slug: str, *, repo_url: str | None = None, idempotency_key: str | None = None
    ) -> identity.Project:
        return await self._run(calls.create_project(name, slug, repo_url), idempotency_key)

    async def list_projects(self) -> Projects:
        return await self._run(calls.list_projects())

    # -- operators ----------------------------------------------------------------------------------
    async def create_tenant(self, name: str, *, idempotency_key: str | None = None) -> identity.Tenant:
        return await self._run(calls.create_tenant(name), idempotency_key)

    async def patch_tenant(self, tenant_id: str, **fields: Any) -> identity.Tenant:
        return await self._run(calls.patch_tenant(tenant_id, fields))

    async def create_key(
        self,
        role: str = "agent",
        *,
        tenant_id: str | None = None,
        agent_id: str | None = None,
        name: str | None = None,
        idempotency_key: str | None = None,
    ) -> identity.CreatedKey:
        return await self._run(calls.create_key(role, tenant_id, agent_id, name), idempotency_key)

    async def list_keys(self, tenant_id: str | None = None) -> Keys:
        return await self._run(calls.list_keys(tenant_id))

    async def revoke_key(self, key_id: str) -> identity.ApiKeyInfo:
        return await self._run(calls.revoke_key(key_id))

    async def put_providers(self, tenant_id: str, body: dict[str, Any]) -> identity.TenantProvidersOut:
        return await self._run(calls.put_providers(tenant_id, body))

    async def get_providers(self, tenant_id: str) -> identity.TenantProvidersOut:
        return await self._run(calls.get_providers(tenant_id))
