"""Knowledge: articles behind the novelty gate, get/list, hybrid search, and the NATS messages of the
knowledge service (`cairn.v1.knowledge.*`).

Every write-back (an agent's `POST /api/v1/knowledge`, graduation's hot memories) goes through one
subject, `subjects.KNOWLEDGE_PROPOSE`, with a `ProposeRequest`; the reply's `data` is a `ProposeResult`.
Scope travels in the signed header as everywhere: the owner of an owner-visible article is the proposing
scope's subject, never a body field.
"""

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from cairn_contracts import limits, subjects
from cairn_contracts.memory import ProjectId
from cairn_contracts.recall import _query
from cairn_contracts.text import clean_text

# Re-exported so a caller of the gate needs only this module.
PROPOSE = subjects.KNOWLEDGE_PROPOSE
GET = subjects.KNOWLEDGE_GET
LIST = subjects.KNOWLEDGE_LIST
SEARCH = subjects.KNOWLEDGE_SEARCH
DELETE = subjects.KNOWLEDGE_DELETE
VISIBLE_IDS = subjects.KNOWLEDGE_VISIBLE_IDS


def _not_blank(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("validation_error", "must not be blank")
    return value


def _body_bytes(value: str) -> str:
    if len(value.encode()) > limits.ARTICLE_BODY_MAX_BYTES:
        raise PydanticCustomError(
            "content_too_large", "body is longer than {cap} bytes", {"cap": limits.ARTICLE_BODY_MAX_BYTES}
        )
    return value


CleanStr = Annotated[str, BeforeValidator(clean_text)]
Title = Annotated[
    str,
    BeforeValidator(clean_text),
    Field(min_length=1, max_length=limits.ARTICLE_TITLE_MAX_CHARS),
    AfterValidator(_not_blank),
]
Body = Annotated[str, BeforeValidator(clean_text), AfterValidator(_not_blank), AfterValidator(_body_bytes)]
Category = Annotated[
    str, BeforeValidator(clean_text), Field(min_length=1, max_length=limits.ARTICLE_CATEGORY_MAX_CHARS)
]
ArticleTags = Annotated[
    list[Annotated[str, BeforeValidator(clean_text), Field(min_length=1, max_length=limits.TAG_MAX_CHARS)]],
    Field(max_length=limits.TAGS_MAX),
]


class Visibility(StrEnum):
    tenant = "tenant"  # every key of the tenant (published articles only)
    owner = "owner"  # only the subject in owner_subject_id


class ArticleStatus(StrEnum):
    published = "published"
    draft = "draft"


class ArticleSource(StrEnum):
    agent = "agent"
    graduated = "graduated"


class Verdict(StrEnum):
    """The novelty gate's verdict. created / gated_to_draft create an article (201); duplicate /
    deduplicated create nothing and return the canonical article (200)."""

    created = "created"  # novel: a new published article
    gated_to_draft = "gated_to_draft"  # a near-duplicate of a visible published article: a draft
    duplicate = "duplicate"  # same content hash as an article the proposer can see (or same source memory)
    deduplicated = "deduplicated"  # same title in the same visibility scope


CREATED_VERDICTS = frozenset({Verdict.created, Verdict.gated_to_draft})


class ArticleProposal(BaseModel):
    """`POST /api/v1/knowledge`: propose an article through the novelty gate. Scope fields are ignored."""

    model_config = ConfigDict(extra="ignore")
    title: Title
    body: Body
    category: Category | None = None
    tags: ArticleTags = []
    project_id: ProjectId = None
    visibility: Visibility = Visibility.tenant


class ProposeRequest(ArticleProposal):
    """NATS body of `cairn.v1.knowledge.propose` (agent writes and graduation alike).

    `owner_subject_id` is never a field: an owner-visible article belongs to the proposing scope's subject.
    Graduation sends `source: graduated` with the memory's id; at most one article exists per source memory
    in a tenant (a constraint), so a repeated graduation returns that article as `duplicate`.
    """

    type: Literal["cairn.v1.knowledge.propose"] = "cairn.v1.knowledge.propose"
    source: ArticleSource = ArticleSource.agent
    source_memory_id: str | None = None


class Article(BaseModel):
    """An article. `body` is filled by GET only; list, search and the gate's reply leave it null."""

    id: str
    title: str
    body: str | None = None
    category: str | None
    tags: list[str]
    status: ArticleStatus
    visibility: Visibility
    owner_subject_id: str | None
    project_id: str | None
    source: ArticleSource
    source_memory_id: str | None
    created_by: str | None
    created_at: datetime
    updated_at: datetime


class ProposeResult(BaseModel):
    """`data` of the propose reply: `{verdict, created, article}`."""

    verdict: Verdict
    created: bool
    article: Article


class ArticleIdRequest(BaseModel):
    id: str


class ListArticlesRequest(BaseModel):
    """NATS body of `cairn.v1.knowledge.list` (the gateway builds it from the query string)."""

    model_config = ConfigDict(extra="ignore")
    limit: Annotated[int, Field(ge=1, le=limits.LIST_LIMIT_MAX)] = limits.LIST_LIMIT_DEFAULT
    offset: Annotated[int, Field(ge=0, le=limits.LIST_OFFSET_MAX)] = 0
    category: CleanStr | None = None
    tag: CleanStr | None = None
    status: ArticleStatus | None = None
    visibility: Visibility | None = None
    source: ArticleSource | None = None
    project_id: ProjectId = None
    all_subjects: bool = False  # superadmin oversight only; ignored for everyone else


KnowledgeSelectionReason = Literal["keyword", "semantic", "keyword+semantic", "keyword_fallback", "unscored"]
SearchMode = Literal["hybrid", "semantic", "keyword"]


class KnowledgeSearchRequest(BaseModel):
    """`POST /api/v1/knowledge/search`. Validated before anything runs: a bad query costs no embedding."""

    model_config = ConfigDict(extra="ignore")
    # A missing query is checked like a blank one (invalid_query), not as a missing field.
    query: Annotated[
        str, BeforeValidator(clean_text), BeforeValidator(_query), Field(validate_default=True)
    ] = ""
    limit: Annotated[int, Field(ge=1, le=limits.RECALL_LIMIT_MAX)] = limits.RECALL_LIMIT_DEFAULT
    project_id: ProjectId = None
    mode: SearchMode = "hybrid"


class DiversityOptions(BaseModel):
    """Knobs of the diversity selector; unset ones take the knowledge service's configured values."""

    enabled: bool | None = None
    mmr_lambda: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    near_dup_threshold: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    over_fetch: Annotated[int, Field(ge=1, le=20)] | None = None
    max_pool: Annotated[int, Field(ge=1, le=500)] | None = None


class KnowledgeSearchMessage(KnowledgeSearchRequest):
    """NATS body of `cairn.v1.knowledge.search`.

    `reduce`: merged recall's mode: over-fetch and REDUCE the pool to `limit` (dropping already-seen,
    duplicate and near-duplicate rows and refilling from the pool). Otherwise (plain search) the selector
    REORDERS the pool (what it did not pick is demoted) and the page is the first `limit`.
    `seen_ids`: articles already shown to the caller's session (merged recall reads its shown-set).
    """

    type: Literal["cairn.v1.knowledge.search"] = "cairn.v1.knowledge.search"
    reduce: bool = False
    seen_ids: Annotated[list[str], Field(max_length=10_000)] = []
    diversity: DiversityOptions = DiversityOptions()
    # Merged recall embeds the query once for both halves; the model name guards against mixing spaces.
    query_vector: Annotated[list[float], Field(max_length=limits.VECTOR_DIM_MAX)] | None = None
    query_vector_model: str | None = None


class KnowledgeHit(BaseModel):
    """An article summary as search returns it (no body)."""

    id: str
    title: str
    category: str | None
    tags: list[str]
    score: float | None  # best-chunk cosine similarity; ts_rank on the keyword fallback; null if unscored
    snippet: str
    selection_reason: KnowledgeSelectionReason
    project_id: str | None = None
    visibility: Visibility = Visibility.tenant
    source: ArticleSource = ArticleSource.agent


class DiversityMeta(BaseModel):
    """`meta.diversity`: what the selector did, with the knobs it applied."""

    enabled: bool
    mode: Literal["reduce", "reorder"]
    candidates: int
    selected: int
    vectors_available: int
    dropped_already_seen: int = 0
    readmitted_already_seen: int = 0
    dropped_exact_duplicates: int = 0
    dropped_near_duplicates: int = 0
    mmr_lambda: float
    near_dup_threshold: float
    over_fetch: int
    max_pool: int


AnswerConfidence = Literal["answer", "weak", "none"]
Provenance = Literal["curated", "search", "none"]


class KnowledgeSearchMeta(BaseModel):
    total_count: int
    limit: int
    mode: SearchMode
    fallback: bool
    reason: str | None
    underfilled: bool
    strategy: Literal["exact", "ann", "keyword"]
    # `curated`: the first result's title is the query itself (pinned first); `search`: ranked results;
    # `none`: nothing matched.
    provenance: Provenance
    confidence: float | None  # the first result's score
    answer_confidence: AnswerConfidence
    diversity: DiversityMeta
    candidates: int  # the pool the selector looked at (merged recall's candidates_considered.knowledge)
    ann_iterative_scan: Literal["off", "applied", "unavailable"] | None = None
    ann_iterative_scan_reason: str | None = None


class VisibleIdsRequest(BaseModel):
    """NATS body of `cairn.v1.knowledge.visible_ids`: which of `ids` the scope's subject can see
    (published tenant-visible articles of its tenant, plus its own owner-visible ones)."""

    ids: Annotated[list[str], Field(max_length=limits.VISIBLE_IDS_MAX)]


class VisibleIdsResult(BaseModel):
    ids: Annotated[list[str], Field(max_length=limits.VISIBLE_IDS_MAX)]
