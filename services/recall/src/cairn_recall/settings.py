"""Recall service settings (env prefix CAIRN_)."""

from typing import Literal

from cairn_servicekit.settings import ServiceSettings


class RecallSettings(ServiceSettings):
    # Over-fetch: the ANN pool is this many times the limit (at least recall_pool_min rows).
    recall_pool_factor: int = 20
    recall_pool_min: int = 200
    hnsw_ef_search: int = 200
    # "relaxed_order" keeps scanning the HNSW graph until the tenant residual has filled the pool.
    hnsw_iterative_scan: str = "relaxed_order"
    # A subject with at most this many live rows is searched exactly (small scans beat any index).
    # 0 forces the ANN path for every subject.
    recall_exact_max_rows: int = 2000
    rrf_k: int = 60
    # Inside hybrid, "all": a keyword hit needs every query term; "any": one term is enough. "all" measured
    # best (bench/retrieval_eval.py): any-term hits on common words crowded out paraphrase matches. The
    # keyword-only mode always matches any term (alone, recall needs the wider net).
    hybrid_keyword_match: Literal["all", "any"] = "all"
    # The keyword list's weight in the fusion (the semantic list weighs 1); bench/retrieval_eval.py measures it.
    rrf_keyword_weight: float = 1.0
    keyword_pool: int = 100
    # Hotness signal
    hot_score_floor: float = 0.6
    hot_cooldown_seconds: int = 3600
    hot_publish_queue: int = 1000
    # Query-embedding cache
    query_cache_size: int = 2048
    query_cache_ttl_seconds: float = 300.0
