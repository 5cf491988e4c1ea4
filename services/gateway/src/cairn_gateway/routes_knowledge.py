"""Knowledge paths: articles behind the novelty gate, served by the knowledge service over NATS."""

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response, status

from cairn_contracts import subjects
from cairn_contracts.envelope import DataEnvelope
from cairn_contracts.errors import Forbidden
from cairn_contracts.knowledge import (
    CREATED_VERDICTS,
    Article,
    ArticleIdRequest,
    ArticleProposal,
    ArticleSource,
    KnowledgeHit,
    KnowledgeSearchMessage,
    KnowledgeSearchRequest,
    ListArticlesRequest,
    ProposeRequest,
    ProposeResult,
    Verdict,
)
from cairn_gateway.deps import ReadScopeDep, ScopeDep, StateDep, WriteScopeDep
from cairn_gateway.idempotency import IDEMPOTENT

router = APIRouter(prefix="/api/v1", tags=["knowledge"])

ArticleId = Annotated[str, Path(max_length=100)]
PROPOSE_TIMEOUT_SECONDS = 30.0


@router.post(
    "/knowledge",
    status_code=status.HTTP_201_CREATED,
    response_model=DataEnvelope[ProposeResult],
    dependencies=[IDEMPOTENT],
    responses={200: {"model": DataEnvelope[ProposeResult], "description": "duplicate / deduplicated"}},
)
async def propose(
    body: ArticleProposal, response: Response, state: StateDep, scope: WriteScopeDep
) -> dict[str, Any]:
    """Propose an article through the novelty gate: `created` / `gated_to_draft` (201, a new article),
    `duplicate` / `deduplicated` (200, nothing created: the canonical article). 503 `gate_unavailable`
    when embeddings are down (nothing written)."""
    request = ProposeRequest.model_validate({**body.model_dump(), "source": ArticleSource.agent})
    # A long body is embedded chunk by chunk before the gate decides: allow it more than a read.
    timeout = max(state.settings.request_timeout_seconds, PROPOSE_TIMEOUT_SECONDS)
    reply = await state.services.request(subjects.KNOWLEDGE_PROPOSE, scope, request, timeout=timeout)
    if Verdict(reply.data["verdict"]) not in CREATED_VERDICTS:
        response.status_code = status.HTTP_200_OK
    return {"data": reply.data, "meta": reply.meta}


@router.get("/knowledge", response_model=DataEnvelope[list[Article]])
async def list_articles(
    query: Annotated[ListArticlesRequest, Query()], state: StateDep, scope: ScopeDep
) -> dict[str, Any]:
    """Articles the caller can read (published tenant-visible, its own owner-visible ones and drafts),
    newest first. A superadmin impersonating a tenant may pass `all_subjects=true` (oversight)."""
    if not scope.is_superadmin:
        query = query.model_copy(update={"all_subjects": False})
    reply = await state.services.request(subjects.KNOWLEDGE_LIST, scope, query)
    return {"data": reply.data, "meta": reply.meta}


@router.post("/knowledge/search", response_model=DataEnvelope[list[KnowledgeHit]])
async def search(body: KnowledgeSearchRequest, state: StateDep, scope: ReadScopeDep) -> dict[str, Any]:
    """Hybrid (keyword + semantic) search of published article summaries, diversity-reordered; see meta
    for provenance, confidence, answer_confidence, diversity and the fallback fields."""
    request = KnowledgeSearchMessage.model_validate(body.model_dump())
    reply = await state.services.request(subjects.KNOWLEDGE_SEARCH, scope, request)
    return {"data": reply.data, "meta": reply.meta}


@router.get("/knowledge/{article_id}", response_model=DataEnvelope[Article])
async def get_article(article_id: ArticleId, state: StateDep, scope: ScopeDep) -> dict[str, Any]:
    """One article with its body (404 for anything the caller cannot read)."""
    reply = await state.services.request(subjects.KNOWLEDGE_GET, scope, ArticleIdRequest(id=article_id))
    return {"data": reply.data, "meta": reply.meta}


@router.delete("/knowledge/{article_id}", response_model=DataEnvelope[Article])
async def delete_article(article_id: ArticleId, state: StateDep, scope: WriteScopeDep) -> dict[str, Any]:
    """Oversight: a superadmin impersonating a tenant deletes any of its articles."""
    if not scope.is_superadmin:
        raise Forbidden("only a superadmin may delete articles")
    reply = await state.services.request(subjects.KNOWLEDGE_DELETE, scope, ArticleIdRequest(id=article_id))
    return {"data": reply.data, "meta": reply.meta}
