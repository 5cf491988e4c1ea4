"""Pure recall logic: reciprocal rank fusion, the speaker prior and the query-embedding cache."""

import uuid

import pytest

from cairn_providers import QueryEmbeddingCache
from cairn_recall.ranking import Ranked, fuse, speaker_of, speaker_prior, wanted_speaker

A, B, C, D = (uuid.UUID(int=i) for i in range(1, 5))


class TestFuse:
    def test_items_in_both_lists_rise_and_are_labelled(self) -> None:
        semantic = [Ranked(A, 0.1), Ranked(B, 0.2), Ranked(C, 0.3)]
        keyword = [Ranked(C, 5.0), Ranked(D, 1.0)]
        fused = fuse(semantic, keyword, k=60)
        assert fused[0].id == C
        assert fused[0].reason == "keyword+semantic"
        assert fused[0].score == 1 / 63 + 1 / 61
        assert {f.id: f.reason for f in fused} == {
            A: "semantic",
            B: "semantic",
            C: "keyword+semantic",
            D: "keyword",
        }

    def test_one_empty_list_keeps_the_other_order(self) -> None:
        assert [f.id for f in fuse([Ranked(A, 0), Ranked(B, 0)], [], k=60)] == [A, B]
        assert [f.id for f in fuse([], [Ranked(D, 0), Ranked(C, 0)], k=60)] == [D, C]

    def test_keyword_weight_scales_its_list(self) -> None:
        fused = fuse([Ranked(A, 0)], [Ranked(B, 0)], k=10, keyword_weight=2.0)
        assert [f.id for f in fused] == [B, A]

    def test_coverage_scales_keyword_hits(self) -> None:
        semantic = [Ranked(A, 0.1)]
        keyword = [Ranked(B, 9.0, coverage=0.04), Ranked(C, 8.0, coverage=1.0)]
        plain = fuse(semantic, keyword, k=10, keyword_weight=1.5)
        scaled = fuse(semantic, keyword, k=10, keyword_weight=1.5, coverage_power=0.5)
        assert [f.id for f in plain] == [B, C, A]
        assert [f.id for f in scaled] == [C, A, B]  # a common-word-only hit falls behind
        assert scaled[2].score == pytest.approx(1.5 * 0.2 / 11)


class TestSpeakerPrior:
    def test_speaker_comes_from_metadata_or_a_leading_tag(self) -> None:
        assert speaker_of("[2023/05/20 (Sat) 00:31] user: I moved to Lisbon", None) == "user"
        assert speaker_of("assistant: try the Nasi Goreng at Miss Bee", None) == "assistant"
        assert speaker_of("Human: hello", None) == "user"
        assert speaker_of("anything", "assistant") == "assistant"
        assert speaker_of("The user prefers dark mode", None) is None
        assert speaker_of("Deploy note: user: admin is locked", None) is None  # the tag must lead

    def test_the_question_decides_whose_turns_it_is_about(self) -> None:
        assert wanted_speaker("Can you remind me of the restaurant you recommended?") == "assistant"
        assert wanted_speaker("You mentioned two-factor methods earlier, which ones?") == "assistant"
        assert wanted_speaker("What brand are my favorite running shoes?") == "user"
        assert wanted_speaker("Where do I currently keep my old sneakers?") == "user"

    def test_other_speakers_turns_are_demoted_and_plain_memories_never(self) -> None:
        fused = fuse([Ranked(A, 0), Ranked(B, 0), Ranked(C, 0)], [], k=10)
        speakers = {A: "assistant", B: None, C: "user"}
        assert [f.id for f in speaker_prior(fused, speakers, "user", 0.1)] == [B, C, A]
        assert [f.id for f in speaker_prior(fused, speakers, "assistant", 0.1)] == [A, B, C]
        assert speaker_prior(fused, speakers, "user", 1.0) == fused


class TestQueryCache:
    def test_hit_miss_and_bound(self) -> None:
        cache = QueryEmbeddingCache(max_entries=2, ttl_seconds=60)
        assert cache.get("t1", "a") is None
        cache.put("t1", "a", [1.0])
        cache.put("t1", "b", [2.0])
        assert cache.get("t1", "a") == [1.0]
        cache.put("t1", "c", [3.0])  # evicts the least recently used: b
        assert cache.get("t1", "b") is None
        assert cache.get("t1", "c") == [3.0]
        assert (cache.hits, cache.misses) == (2, 2)

    def test_providers_never_share_an_entry(self) -> None:
        cache = QueryEmbeddingCache(max_entries=10, ttl_seconds=60)
        cache.put("tenant-a\x00default", "same text", [1.0])
        assert cache.get("tenant-b\x00default", "same text") is None
        assert cache.get("tenant-a\x00http://other/v1\x00m", "same text") is None
        assert cache.get("tenant-a\x00default", "same text") == [1.0]

    def test_entries_expire(self) -> None:
        cache = QueryEmbeddingCache(max_entries=2, ttl_seconds=0)
        cache.put("t1", "a", [1.0])
        assert cache.get("t1", "a") is None
