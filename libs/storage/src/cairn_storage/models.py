"""The schema. Scoped tables (memories, session_memories, session_promotions) are only ever queried
through `cairn_scope`'s guard."""

import uuid
from datetime import date, datetime
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger,
    Boolean,
    Computed,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Identity,
    Index,
    Integer,
    LargeBinary,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    func,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR, UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, column_property, mapped_column

EMBEDDING_DIM = 384  # the local MiniLM model; a provider must be configured to the same dimension


class Base(DeclarativeBase):
    pass


def _uuid_pk() -> Mapped[uuid.UUID]:
    return mapped_column(UUID(as_uuid=True), primary_key=True, default=uuid.uuid4)


def _created() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)


class Tenant(Base):
    __tablename__ = "tenants"
    id: Mapped[uuid.UUID] = _uuid_pk()
    name: Mapped[str] = mapped_column(String(200), unique=True)
    memory_quota: Mapped[int | None] = mapped_column(Integer)
    promotion_budget_per_hour: Mapped[int | None] = mapped_column(Integer)
    rate_limit_per_second: Mapped[float | None] = mapped_column(Float)
    rate_limit_burst: Mapped[int | None] = mapped_column(Integer)
    read_rate_limit_per_second: Mapped[float | None] = mapped_column(Float)
    read_rate_limit_burst: Mapped[int | None] = mapped_column(Integer)
    graduation_recall_threshold: Mapped[int | None] = mapped_column(Integer)
    graduation_served_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = _created()


class ApiKey(Base):
    __tablename__ = "api_keys"
    id: Mapped[uuid.UUID] = _uuid_pk()
    tenant_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("tenants.id", ondelete="CASCADE"), index=True
    )
    role: Mapped[str] = mapped_column(String(20))
    agent_id: Mapped[str | None] = mapped_column(String(200))
    name: Mapped[str | None] = mapped_column(String(200))
    prefix: Mapped[str] = mapped_column(String(32))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 hex; the secret is never stored
    created_at: Mapped[datetime] = _created()
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class RateBucket(Base):
    """Token bucket per key, shared by every gateway replica."""

    __tablename__ = "rate_buckets"
    key_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    tokens: Mapped[float] = mapped_column(Float)
    allowed: Mapped[bool] = mapped_column(Boolean, default=True)  # the outcome of the last take
    rate: Mapped[float] = mapped_column(Float)  # tokens per second in force at the last take
    burst: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Project(Base):
    __tablename__ = "projects"
    __table_args__ = (
        UniqueConstraint("tenant_id", "slug"),
        Index("projects_tenant_repo_idx", "tenant_id", "repo_key"),
    )
    id: Mapped[uuid.UUID] = _uuid_pk()
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    slug: Mapped[str] = mapped_column(String(100))
    repo_url: Mapped[str | None] = mapped_column(String(500))
    repo_key: Mapped[str | None] = mapped_column(String(300))  # normalised owner/repo, for resolution
    created_at: Mapped[datetime] = _created()


class MemoryRecall(Base):
    """How often a memory was recalled (migration 0020). Counted here, not in the memory's own row: every
    rewrite of that row inserts it again into both vector graphs and the full-text index."""

    __tablename__ = "memory_recalls"
    __table_args__ = (
        # The graduation sweep's candidates: one tenant's memories that can still graduate, hottest first.
        Index(
            "memory_recalls_candidates_idx",
            "tenant_id",
            text("recall_count DESC"),
            "memory_id",
            postgresql_where=text("NOT settled"),
        ),
    )
    memory_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True
    )
    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    subject_id: Mapped[str] = mapped_column(String(200))
    recall_count: Mapped[int] = mapped_column(Integer)
    last_recalled_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # Superseded or graduated, kept by a trigger on `memories`: out of the sweep's index.
    settled: Mapped[bool] = mapped_column(Boolean, default=False)


def _recalls_of(memory_id: Any, column: Any) -> Any:
    """One column of a memory's `memory_recalls` row, as a subquery correlated to the memory read around it."""
    return (
        select(column)
        .where(MemoryRecall.memory_id == memory_id)
        .correlate_except(MemoryRecall)
        .scalar_subquery()
    )


class Memory(Base):
    __tablename__ = "memories"
    __mapper_args__ = {"eager_defaults": True}  # server defaults come back in the INSERT's RETURNING
    __table_args__ = (
        Index("memories_scope_created_idx", "tenant_id", "subject_id", "created_at"),
        Index(
            "memories_live_embedding_hnsw_idx",
            "embedding",
            postgresql_using="hnsw",
            postgresql_with={"m": 16, "ef_construction": 64},
            postgresql_ops={"embedding": "vector_cosine_ops"},
            postgresql_where=text("superseded_by IS NULL"),
        ),
        Index(
            "memories_promoted_hash_uniq",
            "tenant_id",
            "subject_id",
            "embedding_content_hash",
            unique=True,
            postgresql_where=text("source = 'promoted'"),
        ),
        Index("memories_tsv_idx", "tsv", postgresql_using="gin"),
        Index(
            "memories_live_scope_idx",
            "tenant_id",
            "subject_id",
            postgresql_where=text("superseded_by IS NULL"),
        ),
        Index("memories_pending_embedding_idx", "created_at", postgresql_where=text("embedding IS NULL")),
    )
    id: Mapped[uuid.UUID] = _uuid_pk()
    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    subject_id: Mapped[str] = mapped_column(String(200))
    project_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    text: Mapped[str] = mapped_column(Text)
    # Full-text side of hybrid recall; generated so no writer can forget it.
    tsv: Mapped[Any] = mapped_column(
        TSVECTOR, Computed("to_tsvector('english', text)", persisted=True), deferred=True
    )
    embedding: Mapped[Any] = mapped_column(Vector(EMBEDDING_DIM), nullable=True, deferred=True)
    embedding_content_hash: Mapped[str | None] = mapped_column(String(64))
    embedding_model: Mapped[str | None] = mapped_column(String(100))
    confidence: Mapped[float] = mapped_column(Float, default=1.0)
    source: Mapped[str] = mapped_column(String(20), default="explicit")
    source_session_id: Mapped[str | None] = mapped_column(String(400))
    tags: Mapped[list[str]] = mapped_column(ARRAY(String(64)), default=list)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB, default=dict)
    superseded_by: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    # Read from `memory_recalls` (a memory never recalled has no row there). Not expired by a flush: no write
    # of this row changes them, and reloading them there would be lazy IO in an async session.
    recall_count: Mapped[int] = column_property(
        func.coalesce(_recalls_of(id, MemoryRecall.recall_count), 0), expire_on_flush=False
    )
    last_recalled_at: Mapped[datetime | None] = column_property(
        _recalls_of(id, MemoryRecall.last_recalled_at), expire_on_flush=False
    )
    graduated_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Graduation (migration 0006): the article this memory graduated into, stamped once with its scope.
    graduated_article_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    graduated_scope: Mapped[str | None] = mapped_column(String(10))  # project | global
    graduation_attempted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = _created()


class MemoryChunk(Base):
    """Chunk vectors 1.. of a long memory (chunk 0 is `Memory.embedding`); recall scores a memory by its
    best chunk. Deleted with the memory; rewritten whenever the memory's vector is."""

    __tablename__ = "memory_chunks"
    __table_args__ = (
        Index("memory_chunks_scope_idx", "tenant_id", "subject_id"),
        Index(
            "memory_chunks_embedding_hnsw_idx",
            "embedding",
            postgresql_using="hnsw",
            postgresql_with={"m": 16, "ef_construction": 64},
            postgresql_ops={"embedding": "vector_cosine_ops"},
        ),
    )
    memory_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True
    )
    chunk_index: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    subject_id: Mapped[str] = mapped_column(String(200))
    embedding: Mapped[Any] = mapped_column(Vector(EMBEDDING_DIM))


class SessionMemory(Base):
    __tablename__ = "session_memories"
    __mapper_args__ = {"eager_defaults": True}
    __table_args__ = (
        Index("session_memories_scope_idx", "tenant_id", "subject_id", "session_id", "seq"),
        Index("session_memories_expiry_idx", "expires_at"),
        Index(
            "session_memories_write_id_idx",
            "tenant_id",
            "subject_id",
            "write_id",
            unique=True,
            postgresql_where=text("write_id IS NOT NULL"),
        ),
    )
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    subject_id: Mapped[str] = mapped_column(String(200))
    session_id: Mapped[str] = mapped_column(String(400))
    role: Mapped[str] = mapped_column(String(20))
    content: Mapped[str] = mapped_column(Text)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB, default=dict)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    write_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))  # idempotent append (0011)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.clock_timestamp()
    )


class SessionPromotion(Base):
    """Promotion watermark: the fingerprint of the session content last compiled."""

    __tablename__ = "session_promotions"
    __table_args__ = (UniqueConstraint("tenant_id", "subject_id", "session_id"),)
    id: Mapped[uuid.UUID] = _uuid_pk()
    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    subject_id: Mapped[str] = mapped_column(String(200))
    session_id: Mapped[str] = mapped_column(String(400))
    fingerprint: Mapped[str] = mapped_column(String(64))
    promoted_count: Mapped[int] = mapped_column(Integer, default=0)
    dropped_count: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime] = _created()


class PromotionRun(Base):
    """A reserved unit of a tenant's hourly compile budget; released runs are deleted."""

    __tablename__ = "promotion_runs"
    __table_args__ = (Index("promotion_runs_budget_idx", "tenant_id", "reserved_at"),)
    id: Mapped[uuid.UUID] = _uuid_pk()
    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    subject_id: Mapped[str] = mapped_column(String(200))
    session_id: Mapped[str] = mapped_column(String(400))
    status: Mapped[str] = mapped_column(String(20), default="reserved")
    reserved_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class TenantProvider(Base):
    """A tenant's own model endpoints; API keys are Fernet tokens (`cairn_providers.SecretBox`)."""

    __tablename__ = "tenant_providers"
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    embedding_base_url: Mapped[str | None] = mapped_column(String(500))
    embedding_model: Mapped[str | None] = mapped_column(String(200))
    embedding_api_key: Mapped[str | None] = mapped_column(Text)
    compiler_base_url: Mapped[str | None] = mapped_column(String(500))
    compiler_model: Mapped[str | None] = mapped_column(String(200))
    compiler_api_key: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


# The generated full-text column of articles: the title weighs more than the body.
ARTICLE_TSV = "setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', body), 'B')"


class Article(Base):
    """A knowledge article. Tenant-scoped; visibility decides which subjects of the tenant see it:
    `tenant` (published: every key; draft: only its proposer) or `owner` (only `owner_subject_id`).
    The partial unique indexes are the novelty gate's race-free half: concurrent identical proposals meet
    in a constraint, never in a check-then-insert."""

    __tablename__ = "articles"
    __mapper_args__ = {"eager_defaults": True}
    __table_args__ = (
        Index("articles_tenant_created_idx", "tenant_id", "created_at"),
        Index(
            "articles_embedding_hnsw_idx",
            "embedding",
            postgresql_using="hnsw",
            postgresql_with={"m": 16, "ef_construction": 64},
            postgresql_ops={"embedding": "vector_cosine_ops"},
        ),
        Index("articles_tsv_idx", "tsv", postgresql_using="gin"),
    )
    id: Mapped[uuid.UUID] = _uuid_pk()
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    title: Mapped[str] = mapped_column(String(200))
    body: Mapped[str] = mapped_column(Text, deferred=True)
    category: Mapped[str | None] = mapped_column(String(64))
    tags: Mapped[list[str]] = mapped_column(ARRAY(String(64)), default=list)
    status: Mapped[str] = mapped_column(String(20))
    visibility: Mapped[str] = mapped_column(String(20))
    owner_subject_id: Mapped[str | None] = mapped_column(String(200))
    proposer_subject_id: Mapped[str] = mapped_column(String(200))
    project_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    source: Mapped[str] = mapped_column(String(20))
    source_memory_id: Mapped[str | None] = mapped_column(String(100))
    content_hash: Mapped[str] = mapped_column(String(64))  # of the body: the gate's exact-duplicate key
    embedding: Mapped[Any] = mapped_column(Vector(EMBEDDING_DIM), deferred=True)
    embedding_content_hash: Mapped[str] = mapped_column(String(64))  # of the embedded text (title + body)
    embedding_model: Mapped[str | None] = mapped_column(String(100))
    tsv: Mapped[Any] = mapped_column(TSVECTOR, Computed(ARTICLE_TSV, persisted=True), deferred=True)
    created_by: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _created()


class ArticleChunk(Base):
    """Chunk vectors 1.. of a long article (chunk 0 is `Article.embedding`); search scores an article by
    its best chunk. Deleted with the article."""

    __tablename__ = "article_chunks"
    __table_args__ = (
        Index("article_chunks_tenant_idx", "tenant_id"),
        Index(
            "article_chunks_embedding_hnsw_idx",
            "embedding",
            postgresql_using="hnsw",
            postgresql_with={"m": 16, "ef_construction": 64},
            postgresql_ops={"embedding": "vector_cosine_ops"},
        ),
    )
    article_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("articles.id", ondelete="CASCADE"), primary_key=True
    )
    chunk_index: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    embedding: Mapped[Any] = mapped_column(Vector(EMBEDDING_DIM))


class RecallShown(Base):
    """Merged recall's shown-set: articles already shown to one session of one subject, until expiry.
    Keyed (tenant, subject, session, article) so no other agent's session token can suppress your rows;
    in PostgreSQL so every recall replica shares it."""

    __tablename__ = "recall_shown"
    __table_args__ = (Index("recall_shown_expiry_idx", "expires_at"),)
    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    subject_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(400), primary_key=True)
    article_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    shown_at: Mapped[datetime] = _created()
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ArticleAccessEvent(Base):
    """The funnel: `surfaced` (merged recall returned the article) and `referenced` (the client says it
    used it), with `origin_search_id` = the recall's recall_id. One row per (recall, article, type), so the
    funnel counts distinct pairs and a repeat is a no-op. Referenced rows feed no ranking."""

    __tablename__ = "article_access_events"
    __table_args__ = (
        UniqueConstraint("origin_search_id", "article_id", "access_type"),
        Index("article_access_events_tenant_idx", "tenant_id", "access_type"),
    )
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    article_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("articles.id", ondelete="CASCADE"))
    access_type: Mapped[str] = mapped_column(String(20))
    origin_search_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    subject_id: Mapped[str] = mapped_column(String(200))
    key_id: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = _created()


class IdempotencyKey(Base):
    """A write request's `Idempotency-Key`, per (tenant, subject): the request's hash and, once it
    succeeded, its response, replayed to every repeat until `expires_at` (24 h). `status_code` is null
    while the first request is in flight; its claim lapses at `locked_until` if that request died."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (Index("idempotency_keys_expiry_idx", "expires_at"),)
    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    subject_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    request_hash: Mapped[str] = mapped_column(String(64))
    owner: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    status_code: Mapped[int | None] = mapped_column(SmallInteger)
    response_body: Mapped[bytes | None] = mapped_column(LargeBinary)
    locked_until: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = _created()


class TenantUsage(Base):
    """A tenant's metered use per UTC day: what a platform team bills or caps on. Counters are added to
    by every replica's periodic flush (`cairn_storage.usage.UsageMeter`); `live_rows` is a snapshot."""

    __tablename__ = "tenant_usage"
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    writes: Mapped[int] = mapped_column(BigInteger, server_default="0")
    session_bytes: Mapped[int] = mapped_column(BigInteger, server_default="0")
    recalls: Mapped[int] = mapped_column(BigInteger, server_default="0")
    embedded_tokens: Mapped[int] = mapped_column(BigInteger, server_default="0")
    compile_calls: Mapped[int] = mapped_column(BigInteger, server_default="0")
    live_rows: Mapped[int] = mapped_column(BigInteger, server_default="0")
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class AuditEvent(Base):
    """Who minted or revoked which key, and every superadmin request acting in a tenant. Append-only:
    a trigger (migration 0010) refuses UPDATE, DELETE and TRUNCATE."""

    __tablename__ = "audit_events"
    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    action: Mapped[str] = mapped_column(String(50))
    actor_key_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    actor_role: Mapped[str | None] = mapped_column(String(20))
    actor_tenant_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    tenant_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    target_key_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    target_role: Mapped[str | None] = mapped_column(String(20))
    target_agent_id: Mapped[str | None] = mapped_column(String(200))
    detail: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    created_at: Mapped[datetime] = _created()
    __table_args__ = (Index("audit_events_tenant_idx", "tenant_id", "id"),)
