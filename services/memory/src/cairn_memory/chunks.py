"""Chunk vectors of long memories: chunk 0 is `memories.embedding` (the embedder reads the text's head),
chunks 1.. go to `memory_chunks`, so a passage near the end of a long memory is still findable."""

import uuid
from collections.abc import Sequence

from sqlalchemy import delete
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from cairn_embeddings import Embedder, chunk_text
from cairn_storage.models import MemoryChunk

# Core statements bound by tenant and subject, so the engine's scope walker can classify them.
_INSERT = insert(MemoryChunk).on_conflict_do_nothing(index_elements=["memory_id", "chunk_index"])


def embedding_inputs(body: str) -> list[str]:
    """What to embed for one memory: the whole text (chunk 0), then its chunks 1.. when it is long."""
    return [body, *chunk_text(body)[1:]]


async def embed_with_chunks(embedder: Embedder, bodies: Sequence[str]) -> list[list[list[float]]]:
    """Per body, its vectors: [whole text, chunk 1, chunk 2, ...], embedded in one call."""
    inputs = [embedding_inputs(body) for body in bodies]
    flat = await embedder.embed([piece for pieces in inputs for piece in pieces])
    out: list[list[list[float]]] = []
    for pieces in inputs:
        out.append(flat[: len(pieces)])
        flat = flat[len(pieces) :]
    return out


async def replace_chunks(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    subject_id: str,
    memory_id: uuid.UUID,
    vectors: Sequence[Sequence[float]],
) -> None:
    """Store `vectors` (the chunk vectors 1.. of one memory) in place of any earlier ones."""
    await session.execute(
        delete(MemoryChunk).where(
            MemoryChunk.tenant_id == tenant_id,
            MemoryChunk.subject_id == subject_id,
            MemoryChunk.memory_id == memory_id,
        )
    )
    if vectors:
        await session.execute(
            _INSERT,
            [
                {
                    "memory_id": memory_id,
                    "chunk_index": index,
                    "tenant_id": tenant_id,
                    "subject_id": subject_id,
                    "embedding": list(vector),
                }
                for index, vector in enumerate(vectors, start=1)
            ],
        )
