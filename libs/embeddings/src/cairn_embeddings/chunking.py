"""Splitting long texts into overlapping chunks that each fit the embedder's window.

MiniLM reads about 256 word pieces (roughly 1,000 characters of English); anything past that is
silently cut. A long memory or article is therefore embedded as several chunk vectors and scored by
its best chunk. Chunks are cut on whitespace near a character budget, so the split is the same for
every provider and needs no tokenizer.
"""

from __future__ import annotations

__all__ = ["CHUNK_CHARS", "CHUNK_OVERLAP_CHARS", "chunk_text"]

CHUNK_CHARS = 900
CHUNK_OVERLAP_CHARS = 150


def _cut(text: str, start: int, end: int) -> int:
    """The last whitespace in the second half of text[start:end], else `end` (a hard cut)."""
    if end >= len(text):
        return len(text)
    window = text.rfind(" ", start + (end - start) // 2, end)
    newline = text.rfind("\n", start + (end - start) // 2, end)
    best = max(window, newline)
    return best if best > start else end


def chunk_text(text: str, size: int = CHUNK_CHARS, overlap: int = CHUNK_OVERLAP_CHARS) -> list[str]:
    """Split ``text`` into chunks of at most ``size`` characters, each overlapping the previous one.

    A text of at most ``size`` characters is one chunk, itself. Chunk 0 is always the head of the text
    (what an embedder truncating at its window would see anyway).

    Args:
        text: The text.
        size: Largest chunk, in characters.
        overlap: Characters repeated from the end of one chunk at the start of the next, so a passage
            on a boundary is whole in at least one chunk.

    Returns:
        The non-empty chunks, in order.
    """
    if overlap >= size:
        raise ValueError("overlap must be smaller than size")
    if len(text) <= size:
        return [text]
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = _cut(text, start, start + size)
        piece = text[start:end].strip()
        if piece:
            chunks.append(piece)
        if end >= len(text):
            break
        nxt = end - overlap
        space = text.find(" ", nxt, end)
        start = space + 1 if space != -1 else nxt
    return chunks
