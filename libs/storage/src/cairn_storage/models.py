"""The schema. Scoped tables (memories, session_memories, session_promotions) are only ever queried
through `cairn_scope`'s guard."""

import uuid
from datetime import datetime
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger,
    Boolean,
    Computed,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR, UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

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
    graduation_recall_threshold: Mapped[int | None] = mapped_column(Integer)
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
    recall_count: Mapped[int] = mapped_column(Integer, default=0)
    last_recalled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
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
    )
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    subject_id: Mapped[str] = mapped_column(String(200))
    session_id: Mapped[str] = mapped_column(String(400))
    role: Mapped[str] = mapped_column(String(20))
    content: Mapped[str] = mapped_column(Text)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB, default=dict)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
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
