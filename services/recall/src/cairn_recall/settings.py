"""Recall service settings (env prefix CAIRN_)."""

from pydantic import SecretStr

from cairn_servicekit.settings import ServiceSettings


class RecallSettings(ServiceSettings):
    # Large subjects (the ANN path): the subject predicate rides inside the HNSW scan, so the pool only has
    # to cover the fused candidates; iterative scan keeps walking the graph until it is full, up to
    # hnsw_max_scan_tuples visited tuples.
    recall_pool_factor: int = 2
    recall_pool_min: int = 100
    hnsw_ef_search: int = 400
    hnsw_iterative_scan: str = "relaxed_order"
    hnsw_max_scan_tuples: int = 50_000
    hnsw_scan_mem_multiplier: float = 8.0
    # A subject with at most this many live rows is searched exactly: bench/recall_scale.py measured the
    # exact top-k over 8,000 rows at 9.6 ms bare SQL (recall 1.0) against 53 ms and recall 0.90 for the
    # subject-filtered HNSW scan, so every subject within the default quota (10,000) is searched exactly.
    # 0 forces the ANN path for every subject.
    recall_exact_max_rows: int = 10_000
    # A subject with more live rows than this gets its own partial HNSW + GIN indexes, built once in the
    # background (cairn_recall.subject_index); recall then walks a graph of that subject only. At most
    # subject_index_max subjects get them (each partial index costs every write a predicate check and
    # every plan a predicate proof). 0 disables.
    subject_index_min_rows: int = 5_000
    subject_index_max: int = 200
    subject_index_maintenance_work_mem: str = "256MB"
    # CREATE INDEX needs the tables' owner, which the services' RLS-bound login is not: the builds connect
    # with this explicit maintenance role (default: database_url, for a deployment whose login owns them).
    index_database_url: SecretStr | None = None
    # Measured on the bench's clustered 20k-row subject (m 16, ef_construction 200): ef_search 100 -> own-top-10
    # recall 0.89, 200 -> 0.975, 400 -> 0.996 at ~5 ms. The pool size wins when it is larger.
    subject_index_ef_search: int = 400
    # Connections of the pool that serves only large subjects' reads (vector and keyword: two per recall),
    # whose connections carry the ANN options above and plan with bound values. Sized for 8 concurrent
    # large-subject recalls: past pool + overflow a connection is opened and closed per read, and at
    # concurrency 16 (bench/memory_writes.py) the pool of 8 opened ~100 backends per 600 recalls (each a
    # fork, catalog caches and every statement prepared again), 29 cpu-ms per recall against 20-24 at 16.
    subject_ann_pool_size: int = 16
    subject_ann_pool_overflow: int = 4
    # The plain scoped asyncpg pool of recall's constant reads (`store.HotReads`).
    hot_read_pool_size: int = 8
    # Large subjects' semantic side from this replica's copy of their live vectors (cairn_recall.vector_copy):
    # exact, and a matrix-vector product instead of two HNSW walks (~35 cpu-ms of PostgreSQL per recall on
    # 10,000 conversation turns). A subject with more vectors (heads + chunks) than the per-subject cap, or a
    # replica past the total (~1.6 KB a vector: ~480 MiB at 300k), keeps the SQL path. 0 disables.
    subject_copy_max_rows: int = 60_000
    subject_copy_max_total_rows: int = 300_000
    # A stale copy (the subject's vectors changed) is reloaded in the background at most this often; recall
    # uses SQL meanwhile, so an embedding backlog does not turn into a reload per recall.
    subject_copy_reload_seconds: float = 5.0
    # Large subjects' keyword side from this replica's copy of their postings (cairn_recall.keyword_copy):
    # exact BM25 from numpy instead of a statement that reads every candidate's tsvector (~15 ms of
    # PostgreSQL per recall on 10,000 conversation turns). Caps in postings (8 bytes each; 10,000 such turns
    # hold ~0.6M); reloads spaced as the vector copy's. 0 disables.
    subject_keyword_copy_max_postings: int = 4_000_000
    subject_keyword_copy_max_total_postings: int = 20_000_000
    # BM25 statistics of large subjects (cairn_recall.term_stats), per recall replica.
    subject_term_stats_ttl_seconds: float = 120.0
    subject_term_stats_max_entries: int = 100_000
    # Hybrid = reciprocal rank fusion of the semantic list and the BM25 keyword list, each this deep.
    semantic_depth: int = 50
    keyword_depth: int = 50
    # Chosen on LongMemEval's tune split with bench/data/retrieval_eval_v1.json as the regression check.
    rrf_k: int = 20
    # The keyword list's weight in the fusion (the semantic list weighs 1).
    rrf_keyword_weight: float = 1.5
    # A keyword hit's fused weight is scaled by (its share of the query's idf mass) ** this (0 disables):
    # a row sharing only a common word with a paraphrased question cannot push the embedding's match out.
    keyword_coverage_power: float = 0.5
    # Okapi BM25 on the keyword side: any query term may match, rare terms (in the subject) weigh most.
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    # Conversation turns by the other speaker than the question is about get this factor on their fused
    # score (1.0 disables): see cairn_recall.ranking.speaker_prior.
    speaker_prior: float = 0.3
    # Hotness signal
    hot_score_floor: float = 0.6
    # A memory this replica announced as recalled is not announced again within this (the memory service
    # bumps it at most once per its own cooldown of the same name).
    hot_cooldown_seconds: int = 3600
    hot_publish_queue: int = 1000
    # Query-embedding cache
    query_cache_size: int = 2048
    query_cache_ttl_seconds: float = 300.0
