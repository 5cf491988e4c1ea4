"""Every REST operation as a `Call`: one definition, used by both the sync and the async client."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

from cairn_client._transport import Call, clean, data_as, envelope_as
from cairn_contracts import identity
from cairn_contracts.envelope import DataEnvelope
from cairn_contracts.graduation import GraduateResult
from cairn_contracts.knowledge import Article, KnowledgeHit, ProposeResult
from cairn_contracts.memory import Memory, SessionTurn
from cairn_contracts.promotion import PromoteAccepted
from cairn_contracts.recall import RecallHit
from cairn_contracts.recall_context import RecallContextResponse, ReferencedResult

API = "/api/v1"

Memories = DataEnvelope[list[Memory]]
RecallResult = DataEnvelope[list[RecallHit]]
History = DataEnvelope[list[SessionTurn]]


def _seg(value: str) -> str:
    """A path segment, escaped so an id can never change the path it is sent to."""
    return quote(str(value), safe="")


def _body(**fields: Any) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in fields.items() if v is not None}


def remember(
    text: str,
    tags: Sequence[str] | None,
    metadata: dict[str, Any] | None,
    confidence: float | None,
    project_id: str | None,
) -> Call[Memory]:
    body = _body(
        text=text,
        tags=list(tags) if tags is not None else None,
        metadata=metadata,
        confidence=confidence,
        project_id=project_id,
    )
    return Call("POST", f"{API}/memory", data_as(Memory), json=body, write=True)


def append_turn(
    session_id: str,
    role: str,
    content: str,
    metadata: dict[str, Any] | None,
    ttl_seconds: int | None,
    expires_at: datetime | None,
) -> Call[SessionTurn]:
    body = _body(
        tier="session",
        session_id=session_id,
        role=role,
        content=content,
        metadata=metadata,
        ttl_seconds=ttl_seconds,
        expires_at=expires_at.isoformat() if expires_at else None,
    )
    return Call("POST", f"{API}/memory", data_as(SessionTurn), json=body, write=True)


def session_history(session_id: str, limit: int | None, offset: int | None) -> Call[History]:
    return Call(
        "GET",
        f"{API}/sessions/{_seg(session_id)}/history",
        envelope_as(History),
        params=clean({"limit": limit, "offset": offset}),
    )


def recall(
    query: str, limit: int | None, project_id: str | None, include_superseded: bool | None, mode: str | None
) -> Call[RecallResult]:
    body = _body(
        query=query, limit=limit, project_id=project_id, include_superseded=include_superseded, mode=mode
    )
    return Call("POST", f"{API}/memory/recall", envelope_as(RecallResult), json=body)


def list_memories(
    limit: int | None,
    offset: int | None,
    source: str | None,
    tag: str | None,
    project_id: str | None,
    include_superseded: bool | None,
    all_subjects: bool | None,
) -> Call[Memories]:
    params = clean(
        {
            "limit": limit,
            "offset": offset,
            "source": source,
            "tag": tag,
            "project_id": project_id,
            "include_superseded": include_superseded,
            "all_subjects": all_subjects,
        }
    )
    return Call("GET", f"{API}/memory", envelope_as(Memories), params=params)


def get(memory_id: str) -> Call[Memory]:
    return Call("GET", f"{API}/memory/{_seg(memory_id)}", data_as(Memory))


def forget(memory_id: str) -> Call[Memory]:
    return Call("DELETE", f"{API}/memory/{_seg(memory_id)}", data_as(Memory))


def supersede(
    memory_id: str,
    text: str,
    tags: Sequence[str] | None,
    metadata: dict[str, Any] | None,
    confidence: float | None,
    project_id: str | None,
) -> Call[Memory]:
    body = _body(
        text=text,
        tags=list(tags) if tags is not None else None,
        metadata=metadata,
        confidence=confidence,
        project_id=project_id,
    )
    return Call("POST", f"{API}/memory/{_seg(memory_id)}/supersede", data_as(Memory), json=body, write=True)


def promote(session_id: str) -> Call[PromoteAccepted]:
    return Call(
        "POST", f"{API}/memory/promote", data_as(PromoteAccepted), json={"session_id": session_id}, write=True
    )


def whoami() -> Call[identity.WhoAmI]:
    return Call("GET", f"{API}/whoami", data_as(identity.WhoAmI))


def resolve_project(slug: str | None, repo_url: str | None, name: str | None) -> Call[identity.Project]:
    params = clean({"slug": slug, "repo_url": repo_url, "name": name})
    return Call("GET", f"{API}/projects/resolve", data_as(identity.Project), params=params)


def create_project(name: str, slug: str, repo_url: str | None) -> Call[identity.Project]:
    body = _body(name=name, slug=slug, repo_url=repo_url)
    return Call("POST", f"{API}/projects", data_as(identity.Project), json=body, write=True)


def list_projects() -> Call[list[identity.Project]]:
    return Call("GET", f"{API}/projects", data_as(list[identity.Project]))


def create_tenant(name: str) -> Call[identity.Tenant]:
    return Call("POST", f"{API}/tenants", data_as(identity.Tenant), json={"name": name}, write=True)


def patch_tenant(tenant_id: str, fields: dict[str, Any]) -> Call[identity.Tenant]:
    return Call("PATCH", f"{API}/tenants/{_seg(tenant_id)}", data_as(identity.Tenant), json=_body(**fields))


def create_key(
    role: str, tenant_id: str | None, agent_id: str | None, name: str | None
) -> Call[identity.CreatedKey]:
    body = _body(role=role, tenant_id=tenant_id, agent_id=agent_id, name=name)
    return Call("POST", f"{API}/keys", data_as(identity.CreatedKey), json=body, write=True)


def list_keys(tenant_id: str | None) -> Call[list[identity.ApiKeyInfo]]:
    headers = {"X-Impersonate-Tenant": tenant_id} if tenant_id else {}
    return Call("GET", f"{API}/keys", data_as(list[identity.ApiKeyInfo]), headers=headers)


def revoke_key(key_id: str) -> Call[identity.ApiKeyInfo]:
    return Call("DELETE", f"{API}/keys/{_seg(key_id)}", data_as(identity.ApiKeyInfo))


def put_providers(tenant_id: str, body: dict[str, Any]) -> Call[identity.TenantProvidersOut]:
    return Call(
        "PUT",
        f"{API}/tenants/{_seg(tenant_id)}/providers",
        data_as(identity.TenantProvidersOut),
        json=body,
    )


def get_providers(tenant_id: str) -> Call[identity.TenantProvidersOut]:
    return Call("GET", f"{API}/tenants/{_seg(tenant_id)}/providers", data_as(identity.TenantProvidersOut))


# -- merged recall, knowledge, graduation ----------------------------------------------------------
KnowledgeHits = DataEnvelope[list[KnowledgeHit]]


def recall_context(
    query: str, limit: int | None, project_id: str | None, session_id: str | None
) -> Call[RecallContextResponse]:
    body = _body(query=query, limit=limit, project_id=project_id, session_id=session_id)
    return Call("POST", f"{API}/recall", envelope_as(RecallContextResponse), json=body)


def referenced(recall_id: str, article_ids: Sequence[str], project_id: str | None) -> Call[ReferencedResult]:
    body = _body(article_ids=list(article_ids), project_id=project_id)
    return Call("POST", f"{API}/recall/{_seg(recall_id)}/referenced", data_as(ReferencedResult), json=body)


def graduate(memory_id: str, re_scope: str | None) -> Call[GraduateResult]:
    body = _body(memory_id=memory_id, re_scope=re_scope)
    return Call("POST", f"{API}/memory/graduate", data_as(GraduateResult), json=body, write=True)


def knowledge_propose(
    title: str,
    body: str,
    category: str | None,
    tags: Sequence[str] | None,
    project_id: str | None,
    visibility: str | None,
) -> Call[ProposeResult]:
    payload = _body(
        title=title,
        body=body,
        category=category,
        tags=list(tags) if tags is not None else None,
        project_id=project_id,
        visibility=visibility,
    )
    return Call("POST", f"{API}/knowledge", data_as(ProposeResult), json=payload, write=True)


def knowledge_get(article_id: str) -> Call[Article]:
    return Call("GET", f"{API}/knowledge/{_seg(article_id)}", data_as(Article))


def knowledge_search(
    query: str, limit: int | None, project_id: str | None, mode: str | None
) -> Call[KnowledgeHits]:
    body = _body(query=query, limit=limit, project_id=project_id, mode=mode)
    return Call("POST", f"{API}/knowledge/search", envelope_as(KnowledgeHits), json=body)
