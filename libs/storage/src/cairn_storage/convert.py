"""Rows to contract models (shared by every service that returns memories)."""

from cairn_contracts.memory import Memory, SessionTurn, Source, TurnRole
from cairn_storage.models import Memory as MemoryRow
from cairn_storage.models import SessionMemory


def memory_out(row: MemoryRow, *, with_subject: bool = False) -> Memory:
    return Memory(
        id=str(row.id),
        text=row.text,
        source=Source(row.source),
        confidence=row.confidence,
        tags=list(row.tags or []),
        metadata=dict(row.metadata_ or {}),
        project_id=str(row.project_id) if row.project_id else None,
        source_session_id=row.source_session_id,
        superseded_by=str(row.superseded_by) if row.superseded_by else None,
        embedding_status="ready" if row.embedding_content_hash else "pending",
        recall_count=row.recall_count,
        last_recalled_at=row.last_recalled_at,
        created_at=row.created_at,
        subject_id=row.subject_id if with_subject else None,
    )


def turn_out(row: SessionMemory) -> SessionTurn:
    return SessionTurn(
        seq=row.seq,
        session_id=row.session_id,
        role=TurnRole(row.role),
        content=row.content,
        metadata=dict(row.metadata_ or {}),
        expires_at=row.expires_at,
        created_at=row.created_at,
    )
