"""Pure recall logic: reciprocal rank fusion and the query-embedding cache."""

import uuid

from cairn_recall.query_cache import QueryEmbeddingCache
from cairn_recall.service import fuse
from cairn_recall.store import Ranked

A, B, C, D = (uuid.UUID(int=i) for i in range(1, 5))


class TestFuse:
    def test_items_in_both_lists_rise_and_are_labelled(self) -> None:
        semantic = [Ranked(A, 0.1), Ranked(B, 0.2), Ranked(C, 0.3)]
        keyword = [Ranked(C, 5.0), Ranked(D, 1.0)]
        fused = fuse(semantic, keyword, k=60)
        assert fused[0] == (C, "keyword+semantic")
        assert dict(fused) == {A: "semantic", B: "semantic", C: "keyword+semantic", D: "keyword"}

    def test_one_empty_list_keeps_the_other_order(self) -> None:
        assert [m for m, _ in fuse([Ranked(A, 0), Ranked(B, 0)], [], k=60)] == [A, B]
        assert [m for m, _ in fuse([], [Ranked(D, 0), Ranked(C, 0)], k=60)] == [D, C]


class TestQueryCache:
    def test_hit_miss_and_bound(self) -> None:
        cache = QueryEmbeddingCache(max_entries=2, ttl_seconds=60)
        assert cache.get("a") is None
        cache.put("a", [1.0])
        cache.put("b", [2.0])
        assert cache.get("a") == [1.0]
        cache.put("c", [3.0])  # evicts the least recently used: b
        assert cache.get("b") is None
        assert cache.get("c") == [3.0]
        assert (cache.hits, cache.misses) == (2, 2)

    def test_entries_expire(self) -> None:
        cache = QueryEmbeddingCache(max_entries=2, ttl_seconds=0)
        cache.put("a", [1.0])
        assert cache.get("a") is None
