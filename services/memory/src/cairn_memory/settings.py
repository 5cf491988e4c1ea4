"""Memory service settings (env prefix CAIRN_)."""

from pydantic import Field

from cairn_contracts import limits
from cairn_servicekit.consumer import Redelivery
from cairn_servicekit.settings import ServiceSettings


class MemorySettings(ServiceSettings):
    default_memory_quota: int = limits.DEFAULT_MEMORY_QUOTA
    # Used when a session turn names neither expires_at nor ttl_seconds.
    session_default_ttl_seconds: int = 7 * 24 * 3600
    session_prune_interval_seconds: float = 60.0
    # Per-session caps over its live (unexpired) turns: a runaway agent cannot grow one session without bound.
    session_max_turns: int = Field(default=limits.SESSION_MAX_TURNS_DEFAULT, ge=1)
    session_max_bytes: int = Field(
        default=limits.SESSION_MAX_BYTES_DEFAULT, ge=limits.SESSION_CONTENT_MAX_BYTES
    )
    # Write micro-batching (`cairn_memory.batching`): writes that arrive while a batch runs are committed
    # together, up to this many per transaction, with at most `write_batch_lanes` transactions in flight.
    write_batch_max: int = Field(default=64, ge=1)
    write_batch_lanes: int = Field(default=2, ge=1)
    # A memory's recall_count is bumped at most once per this many seconds.
    hot_cooldown_seconds: int = 3600
    # A promoted candidate this similar (cosine) to a live promoted memory supersedes it.
    promotion_near_duplicate_threshold: float = 0.9
    # JetStream replication of the memory events stream (3 on a 3-node NATS cluster).
    events_stream_replicas: int = Field(default=1, ge=1, le=5)
    # Embedding worker
    embed_batch_size: int = 64
    # Niceness the worker runs at: sharing a host with the request paths, it takes the CPU they leave
    # (a write burst is acknowledged first and embedded right after). 0 keeps the default priority.
    embed_nice: int = Field(default=10, ge=0, le=19)
    # On Linux, run it under SCHED_IDLE as well: it then gets a core only when no request path wants it
    # (nice 10 still took ~40% of a core from 64 agents' writes on two cores). Its backlog waits out a
    # burst and drains after it; false keeps only the niceness.
    embed_sched_idle: bool = True
    embed_fetch_timeout_seconds: float = 1.0
    # After a full batch, the worker holds off while its backlog grows by this many writes a second or more
    # (a burst being acknowledged), at most `embed_burst_max_wait_seconds` at a time and then embedding at
    # least as long (cairn_memory.burst). 0 never holds off.
    embed_burst_rate: float = Field(default=100.0, ge=0)
    embed_burst_max_wait_seconds: float = Field(default=10.0, ge=0, le=60)
    # Rows still pending after this long are embedded by the worker's sweep (covers a lost publish).
    embed_sweep_interval_seconds: float = 30.0
    embed_sweep_min_age_seconds: float = 15.0
    # Embedding backlog / lag gauges are re-read this often (one indexed query on pending rows).
    embed_backlog_poll_seconds: float = 15.0
    # Live-row snapshot into tenant_usage and the top-N tenants gauge (a count over all live rows).
    usage_snapshot_interval_seconds: float = 300.0
    usage_top_tenants: int = 10
    # JetStream consumers (embedder, recall bumps): attempts per message before it is dead-lettered, and
    # the redelivery backoff between them (doubling, capped).
    jetstream_max_deliver: int = 8
    jetstream_retry_initial_seconds: float = 1.0
    jetstream_retry_max_seconds: float = 60.0

    def redelivery(self) -> Redelivery:
        return Redelivery(
            self.jetstream_max_deliver, self.jetstream_retry_initial_seconds, self.jetstream_retry_max_seconds
        )
