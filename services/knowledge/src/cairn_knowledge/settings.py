"""Knowledge service settings (env prefix CAIRN_)."""

from typing import Literal

from cairn_servicekit.settings import ServiceSettings


class KnowledgeSettings(ServiceSettings):
    # Novelty gate: a proposal this similar (cosine) to a visible published article becomes a draft.
    knowledge_near_dup_threshold: float = 0.92
    # A long body is embedded as at most this many chunk vectors (chunk 0 first; the full body is always
    # keyword-searchable). 32 chunks cover about the first 24 KB; the local model embeds them in ~1-2 s.
    knowledge_max_chunks: int = 32
    # A tenant with at most this many articles is searched exactly; larger ones take the HNSW index.
    # bench/knowledge_search.py (10k articles, clustered near-copies plus 40 distinct labelled ones): the
    # exact scan takes ~8 ms with inline vectors and keeps semantic recall@5 at 0.833; the HNSW graph
    # (m 16, ef_construction 64) at ef_search 200 found 0.54 (0.69 at ef_construction 200): a few articles
    # far from a dense cluster are poorly linked. So exact up to 20k.
    knowledge_exact_max_rows: int = 20000
    # Exact search of those tenants scores a per-replica copy of their published vectors in numpy instead of
    # in PostgreSQL (cairn_knowledge.vector_cache: ~8 ms of database CPU per search at 10k articles), up to
    # this many vectors in all (about 1.6 KB of memory each); 0 scores every search in SQL.
    knowledge_vector_cache_max_rows: int = 200_000
    # That choice reads the tenant's article count, kept this long per replica (a hint, not a bound).
    knowledge_strategy_ttl_seconds: float = 30.0
    knowledge_hnsw_ef_search: int = 200
    # The ANN path over-fetches this many rows beyond the candidates (drafts and others' owner articles).
    knowledge_ann_pool_margin: int = 50
    knowledge_hnsw_iterative_scan: Literal["off", "relaxed_order", "strict_order"] = "relaxed_order"
    # Semantic and keyword candidate lists each hold at least this many rows before fusion.
    knowledge_candidate_pool: int = 50
    knowledge_rrf_k: int = 60
    # The keyword side matches the query's rarest terms while their article counts add up to at most this
    # (every term still counts in the ranking); the counts are kept per replica for a while.
    knowledge_keyword_scan_max: int = 500
    knowledge_term_counts_ttl_seconds: float = 120.0
    knowledge_term_counts_max_entries: int = 100_000
    knowledge_snippet_chars: int = 280
    # Diversity selection (recall_diversity_* in the reference)
    recall_diversity_enabled: bool = True
    recall_diversity_lambda: float = 0.7
    recall_diversity_near_dup_threshold: float = 0.95
    recall_diversity_over_fetch: int = 3
    recall_diversity_max_pool: int = 50
    # Query-embedding cache (search embeds the query unless merged recall handed its vector over)
    knowledge_query_cache_size: int = 2048
    knowledge_query_cache_ttl_seconds: float = 300.0
